import http from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { ERRORS } from '../api/error-factories.js'
import { errorBody, newInstanceId } from '../api/errors.js'

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (headers and request line over
 * Node's `maxHeaderSize`, a request timing out while it arrives, bytes that are not HTTP) get
 * Wharf's error body like every other refusal, instead of Fastify's own `{error, message,
 * statusCode}`. Nothing of the request is known here (no route, no `Accept`), so the answer is
 * always JSON, written by hand on the socket, and the connection closes: the parser cannot go on.
 */
export function answerClientError(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has nobody left to answer (Node's own advice for this event).
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  const [status, message] = refusal(err.code)
  const api = ERRORS.badRequest(message)
  const body = JSON.stringify({ ...errorBody(api, newInstanceId()), 'http-code': status })
  this.log.debug({ err, status }, 'client error')
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    )
  }
  socket.destroy(err)
}

/** The status HTTP has for each thing the parser refuses (docs/decisions.md, "Requests and responses"). */
function refusal(code: string | undefined): [number, string] {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return [
      431,
      `The request line and headers together exceed the server's limit of ${http.maxHeaderSize} bytes: send shorter headers or a shorter URL`,
    ]
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return [408, 'The request did not arrive in time']
  return [400, 'The request is not well-formed HTTP']
}
