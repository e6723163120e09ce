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
]

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'wharf' },
    timestamp: pino.stdTimeFunctions.isoTime,
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
  })
}
