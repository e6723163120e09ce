import pino, { type Logger } from 'pino'

/** Credentials never reach the log: these request headers are redacted wherever they appear. */
const SECRET_HEADERS = [
  'authorization',
  'x-serviceapi-key',
  'x-filesapi-key',
  'x-serviceapi-auth',
  'x-filesapi-auth',
  'x-service-reauthentication',
  'x-files-reauthentication',
  'cookie',
  'x-bundle-registration-code',
]

// Query parameters work for every method, so a password or key may come in the URL: its value is
// hidden from the request log. Signed URLs (downloads, upload parts) carry their proof the same way.
const SECRET_PARAM = /pass|key|secret|token|auth|session|sig/i

// Download links carry their signed token as a path segment (`/downloads/<token>/<name>`): it is
// as good as a password for the file until it expires, so the log keeps only the route's name.
// Every other signed link (upload parts, export CSVs, billing PDFs) signs in the query string.
// Share links' codes are their passwords too: `/public/bundles/<code>`, `/f/<code>`, and the
// signed links of their downloads and ZIPs; a user's ZIP link (`/zip_downloads/<token>`) as well.
const SECRET_PATH_SEGMENT =
  /(\/api\/rest\/v1\/(?:downloads|zip_downloads|public\/bundles|public\/bundle_downloads|public\/bundle_zips)\/|^\/f\/)[^/?#]+/gi

/** The URL with signed-link tokens and the values of secret-looking query parameters replaced. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?')
  const path = (q === -1 ? url : url.slice(0, q)).replace(SECRET_PATH_SEGMENT, '$1[redacted]')
  if (q === -1) return path
  const params = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=')
      const rawName = eq === -1 ? pair : pair.slice(0, eq)
      let name = rawName
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '))
      } catch {
        // An undecodable name is matched as written.
      }
      return eq !== -1 && SECRET_PARAM.test(name) ? `${rawName}=[redacted]` : pair
    })
  return `${path}?${params.join('&')}`
}

/** Fastify's request summary, with the URL redacted. */
function serializeRequest(req: any) {
  return {
    method: req.method,
    url: typeof req.url === 'string' ? redactUrl(req.url) : req.url,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket ? req.socket.remotePort : undefined,
  }
}

/** `destination` defaults to stdout; tests pass a stream to read what would be logged. */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: 'wharf' },
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: { req: serializeRequest, err: pino.stdSerializers.err },
    redact: {
      paths: [
        ...SECRET_HEADERS.map((h) => `req.headers["${h}"]`),
        ...SECRET_HEADERS.map((h) => `headers["${h}"]`),
        'password',
        '*.password',
        'key',
      ],
      censor: '[redacted]',
    },
  }
  return destination ? pino(options, destination) : pino(options)
}
