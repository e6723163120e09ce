import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../api/errors.js'
import { xmlEscape } from '../api/xml-text.js'
import { toApiError } from '../http/error-handler.js'

/** Wharf's own namespace for what a WebDAV error body says beyond the DAV precondition. */
export const WHARF_NS = 'urn:x-wharf:dav'

/**
 * A refusal in WebDAV's terms: the status RFC 4918 gives the case, and the precondition or
 * postcondition element (`lock-token-submitted`, `propfind-finite-depth`, …) when it names one.
 */
export class DavError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly condition?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
    this.name = 'DavError'
  }
}

/** The status a facade refusal has in WebDAV: the REST family, except where RFC 4918 says more. */
const TYPE_STATUS: Record<string, number> = {
  'bad-request/destination-same': 403,
  'bad-request/method-not-allowed': 405,
  'bad-request/cannot-download-directory': 405,
  'bad-request/unsupported-media-type': 415,
  'processing-failure/destination-exists': 409,
  'processing-failure/destination-parent-does-not-exist': 409,
  'processing-failure/destination-parent-conflict': 409,
  'processing-failure/could-not-create-parent': 409,
  'processing-failure/folder-not-empty': 409,
  'processing-failure/path-too-long': 400,
  'processing-failure/file-locked': 423,
  'processing-failure/folder-locked': 423,
  'processing-failure/resource-locked': 423,
  'processing-failure/subfolder-locked': 423,
}

export function davStatusOf(err: ApiError): number {
  return TYPE_STATUS[err.type] ?? err.status
}

export const BASIC_CHALLENGE = 'Basic realm="Wharf", charset="UTF-8"'

/**
 * Every error under the WebDAV prefix: a status and a small XML body (`D:error` with the
 * precondition when there is one, and Wharf's error type and message), never the REST JSON body,
 * which WebDAV clients would show as garbage or choke on.
 */
export function handleDavError(
  err: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  let status: number
  let message: string
  let type: string | undefined
  let condition: string | undefined
  let headers: Record<string, string> = {}
  if (err instanceof DavError) {
    ;({ status, message, condition, headers } = err)
  } else {
    const api = toApiError(err)
    if (api) {
      status = davStatusOf(api)
      message = api.message
      type = api.type
      if (api.extras.retryAfter !== undefined) headers['Retry-After'] = String(api.extras.retryAfter)
      headers = { ...headers, ...(api.extras.headers ?? {}) }
      if (status >= 500) request.log.error({ err: api.extras.cause ?? err, type, reqId: request.id }, message)
    } else {
      request.log.error({ err, reqId: request.id }, 'unexpected error')
      status = 500
      message = 'An unexpected error occurred'
    }
  }
  if (status === 401) headers['WWW-Authenticate'] = BASIC_CHALLENGE
  // A refused upload's body is not read: closing beats reading gigabytes only to drop them.
  if (!request.raw.complete) headers['Connection'] = 'close'
  reply.code(status).headers(headers)
  if (request.method === 'HEAD') return reply.send()
  const body =
    '<?xml version="1.0" encoding="utf-8"?>\n' +
    `<D:error xmlns:D="DAV:" xmlns:W="${WHARF_NS}">` +
    (condition ? (condition.startsWith('<') ? condition : `<D:${condition}/>`) : '') +
    (type ? `<W:type>${xmlEscape(type)}</W:type>` : '') +
    `<W:message>${xmlEscape(message)}</W:message></D:error>\n`
  return reply.type('application/xml; charset=utf-8').send(body)
}

export function isApiError(err: unknown, ...types: string[]): err is ApiError {
  return err instanceof ApiError && (types.length === 0 || types.includes(err.type))
}
