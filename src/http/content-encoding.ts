import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { ERRORS } from '../api/error-factories.js'

/**
 * Wharf decodes no content coding of request bodies (decisions.md, "Requests and responses"): a
 * JSON or XML body would be parsed as compressed bytes, and an upload part would be stored as
 * them, the file silently differing from what the client meant. So a body whose
 * `Content-Encoding` names anything but `identity` is refused before a byte of it is read, and the
 * answer says, as RFC 9110 asks, which coding is accepted.
 */
export function refuseEncodedBody(
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
) {
  const header = request.headers['content-encoding']
  if (header === undefined || !hasBody(request.headers)) return done()
  const codings = header
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '')
  if (codings.every((c) => c === 'identity')) return done()
  reply.header('Accept-Encoding', 'identity')
  done(
    ERRORS.unsupportedMediaType(
      `Unsupported Content-Encoding "${header}": send the body uncompressed (identity)`,
    ),
  )
}

/** Whether a request announces a body: chunked, or a length above zero. */
export function hasBody(headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length']) > 0
}
