import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { refusedTextCharacter } from '../api/control-characters.js'
import { ERRORS } from '../api/error-factories.js'
import { ApiError, type ErrorType, errorBody, newInstanceId } from '../api/errors.js'
import { translateStorageError } from '../db/errors.js'
import { toXml } from './format.js'

interface AjvError {
  keyword: string
  instancePath: string
  params: Record<string, unknown>
  message?: string
  // Present with Ajv's `verbose` option (app.ts).
  data?: unknown
  parentSchema?: Record<string, unknown>
}

/** Request-schema failures become the API's bad-request types, never a raw framework error. */
export function fromValidation(errors: AjvError[], context: string | undefined): ApiError {
  const e = errors[0]!
  const where =
    context === 'querystring' ? 'query parameter' : context === 'params' ? 'path parameter' : 'parameter'
  const field = e.instancePath.replace(/^\//, '').replace(/\//g, '.')
  if (e.keyword === 'required') {
    return ERRORS.requestParamsRequired(`Missing required ${where}: ${String(e.params['missingProperty'])}`)
  }
  if (e.keyword === 'additionalProperties') {
    return ERRORS.requestParamsInvalid(`Unknown ${where}: ${String(e.params['additionalProperty'])}`)
  }
  // Free text holding a character its rule refuses (control-characters.ts).
  const check = e.parentSchema?.['x-check']
  if (e.keyword === 'pattern' && (check === 'text' || check === 'text-lines') && typeof e.data === 'string') {
    const at = refusedTextCharacter(e.data, check === 'text' ? 'line' : 'lines')
    return ERRORS.requestParamsContainInvalidCharacter(
      `${field} must not contain control characters or bidirectional overrides${at ? ` (${at})` : ''}`,
    )
  }
  // A date-time the parser cannot read is refused as the parser refuses it.
  if (
    (e.keyword === 'format' && e.params['format'] === 'date-time') ||
    (e.keyword === 'minLength' && e.parentSchema?.['format'] === 'date-time')
  ) {
    return ERRORS.datetimeParse(`${field} is not a valid ISO 8601 date or date-time: "${String(e.data)}"`)
  }
  if (field === '' && e.keyword === 'type') {
    return ERRORS.invalidBody('The request body must be an object of named fields')
  }
  return ERRORS.requestParamsInvalid(`Invalid ${where} ${field}: ${e.message ?? 'invalid value'}`)
}

const FASTIFY_CODES: Record<string, ErrorType> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'bad-request/unsupported-media-type',
  FST_ERR_CTP_BODY_TOO_LARGE: 'bad-request/invalid-body',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'bad-request/invalid-body',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad-request/invalid-body',
  FST_ERR_CTP_INVALID_JSON_BODY: 'bad-request/invalid-body',
  FST_ERR_BAD_URL: 'bad-request/invalid-path',
}

export function toApiError(err: FastifyError): ApiError | null {
  if (err instanceof ApiError) return err
  // A full disk or database, whichever route met it (db/errors.ts).
  const storage = translateStorageError(err)
  if (storage instanceof ApiError) return storage
  if (err.validation) return fromValidation(err.validation as AjvError[], err.validationContext)
  const mapped = err.code ? FASTIFY_CODES[err.code] : undefined
  if (mapped) return new ApiError(mapped, err.message)
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) return ERRORS.badRequest(err.message)
  return null
}

/** Renders any error as the spec's error body, in the request's format. */
export function handleError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const instance = newInstanceId()
  let api = toApiError(err)
  if (api) {
    if (api.status >= 500) {
      // Once, with the underlying failure (SQLITE_FULL, ENOSPC …) when there is one.
      const cause = api.extras.cause
      const logged = cause instanceof Error ? cause : err
      const code = (cause as { code?: unknown } | undefined)?.code
      request.log.error({ err: logged, code, type: api.type, instance, reqId: request.id }, api.message)
    }
  } else {
    request.log.error({ err, instance, reqId: request.id }, 'unexpected error')
    api = ERRORS.internalServerError('An unexpected error occurred; quote the instance id when reporting it')
  }
  const body = errorBody(api, instance)
  reply.code(api.status)
  if (api.extras.retryAfter !== undefined) reply.header('Retry-After', String(api.extras.retryAfter))
  for (const [k, v] of Object.entries(api.extras.headers ?? {})) reply.header(k, v)
  // A Buffer bypasses any serializer the route installed for its own payloads.
  if (request.format === 'xml') {
    return reply.type('application/xml; charset=utf-8').send(Buffer.from(toXml(body, 'error_response')))
  }
  return reply.type('application/json; charset=utf-8').send(Buffer.from(JSON.stringify(body)))
}
