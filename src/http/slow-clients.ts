import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import { hasBody } from './content-encoding.js'

/** How long the HTTP server waits for slow clients (config.ts reads these settings). */
export interface HttpTimeouts {
  /** The request line and headers must arrive within this long. */
  headersTimeoutMs: number
  /** A connection with no byte received or sent for this long is closed. */
  idleTimeoutMs: number
  /** An idle keep-alive connection is closed after this long. */
  keepAliveTimeoutMs: number
  /** A request body must bring at least this many bytes per second (0: no minimum)… */
  minBodyBytesPerSecond: number
  /** …averaged over each window of this length. */
  bodyRateWindowMs: number
}

/**
 * Node's and Fastify's connection limits from the settings. None of them bounds a whole request:
 * a multi-gigabyte part flowing steadily may take many minutes and must not be cut off.
 * - headers must arrive within `headersTimeoutMs` (Node answers 408 and closes);
 * - a connection with no byte in or out for `idleTimeoutMs` is closed (a stalled body, or a
 *   client that stopped reading its download);
 * - an idle keep-alive connection is closed after `keepAliveTimeoutMs`.
 */
export function connectionOptions(http: HttpTimeouts): Partial<FastifyServerOptions> {
  return {
    connectionTimeout: http.idleTimeoutMs,
    keepAliveTimeout: http.keepAliveTimeoutMs,
    requestTimeout: 0,
    http: {
      headersTimeout: http.headersTimeoutMs,
      // Node looks for expired headers on this beat (30 s by default): a quarter of the limit
      // closes a slow sender within 1.25 times it.
      connectionsCheckingInterval: Math.min(30_000, Math.max(25, Math.floor(http.headersTimeoutMs / 4))),
    },
  } as Partial<FastifyServerOptions>
}

const REQUEST_TIMEOUT = Buffer.from(
  'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n',
  'latin1',
)

/**
 * A body trickling in a byte at a time keeps the idle timer from firing while it holds a
 * connection (and a descriptor) for as long as it likes. Each request with a body must bring at
 * least `minBodyBytesPerSecond` in every window of `bodyRateWindowMs` until it is complete, else
 * the connection is answered 408 (when no answer has started) and closed. A window in which Wharf
 * itself did not read (bytes waiting in the request's buffer: a slow disk, a pending check) does
 * not count against the client. Only buffered bytes say so: a stream read with `for await` is
 * never "flowing" (the iterator pulls it), even while the iterator waits for the client.
 *
 * The guard times a body only while a request is being answered: once its answer is sent, a body
 * not read to the end is abandoned, and its connection is closed after the answer (never drained
 * at the client's pace, nor timed and cut off later with a warning about a request long answered).
 */
export function guardBodyRate(app: FastifyInstance, http: HttpTimeouts): void {
  if (http.minBodyBytesPerSecond === 0) return
  const minPerWindow = Math.max(1, Math.ceil((http.minBodyBytesPerSecond * http.bodyRateWindowMs) / 1000))
  app.addHook('onRequest', (request, reply, done) => {
    const raw = request.raw
    if (!hasBody(raw.headers) || raw.complete) return done()
    const socket = raw.socket
    let seen = socket.bytesRead
    const timer = setInterval(() => {
      const read = socket.bytesRead
      const waiting = raw.readableLength > 0
      if (read - seen >= minPerWindow || waiting) {
        seen = read
        return
      }
      stop()
      request.log.warn(
        { reqId: request.id, ip: request.ip, bytesPerWindow: read - seen, windowMs: http.bodyRateWindowMs },
        'request body too slow: connection closed',
      )
      if (!reply.raw.headersSent) socket.end(REQUEST_TIMEOUT)
      // A client that reads nothing back does not hold the socket open either.
      setTimeout(() => socket.destroy(), 1000).unref()
    }, http.bodyRateWindowMs)
    timer.unref()
    const stop = () => clearInterval(timer)
    raw.once('end', stop)
    raw.once('close', stop)
    // Sent (or cut short): what is left of the body is no longer this request's.
    reply.raw.once('close', stop)
    done()
  })
  app.addHook('onSend', (request, reply, payload, done) => {
    if (hasBody(request.raw.headers) && !request.raw.complete) reply.header('Connection', 'close')
    done(null, payload)
  })
}
