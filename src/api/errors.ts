import crypto from 'node:crypto'
import { ERROR_TYPES, type ErrorType, WHARF_ERROR_TYPES } from './error-types.js'

export { ERROR_TYPES, type ErrorType, WHARF_ERROR_TYPES }

/** HTTP status of each error family (decisions.md, "Status codes"). */
const FAMILY_STATUS: Record<string, number> = {
  'bad-request': 400,
  'not-authenticated': 401,
  'not-authorized': 403,
  'not-found': 404,
  'processing-failure': 422,
  'rate-limited': 429,
  'service-unavailable': 503,
  'site-configuration': 403,
  'internal-server-error': 500,
}

/**
 * Types whose status is not their family's: HTTP has a status of its own for them, which
 * clients and proxies understand (docs/decisions.md, "Requests and responses").
 */
const TYPE_STATUS: Partial<Record<ErrorType, number>> = {
  'bad-request/method-not-allowed': 405,
  // 507 Insufficient Storage: the server's disk, not the request, is at fault, and nothing was kept.
  'service-unavailable/storage-full': 507,
  // 416 Range Not Satisfiable, though its family (processing-failure) means 422: download clients
  // and resumable transfer tools act on 416 itself, and the body still names the type.
  'processing-failure/invalid-range': 416,
}

export function statusOf(type: ErrorType): number {
  const own = TYPE_STATUS[type]
  if (own !== undefined) return own
  const family = type.split('/')[0] ?? type
  const status = FAMILY_STATUS[family]
  if (status === undefined) throw new Error(`error type without a family: ${type}`)
  return status
}

/** `not-authorized/api-key-is-path-restricted` → `Api Key Is Path Restricted`. */
export function titleOf(type: ErrorType): string {
  const slug = type.split('/').pop() ?? type
  return slug
    .split('-')
    .map((w) => (w ? w[0]!.toUpperCase() + w.slice(1) : w))
    .join(' ')
}

export interface ModelErrors {
  /** Parameter name → messages (English); rendered as errors / model_errors / model_error_keys. */
  [field: string]: string[]
}

/** Adds one message for a field to a model-errors map. */
export function addModelError(errors: ModelErrors, field: string, message: string): void {
  const list = errors[field]
  if (list) list.push(message)
  else errors[field] = [message]
}

export interface ApiErrorExtras {
  modelErrors?: ModelErrors
  /** The failure behind this error, for the server log (never shown to the client). */
  cause?: unknown
  /** Seconds, for rate-limited errors. */
  retryAfter?: number
  headers?: Record<string, string>
}

/** The one error class of the API; the HTTP status follows from the type. */
export class ApiError extends Error {
  readonly status: number
  readonly title: string

  constructor(
    readonly type: ErrorType,
    message: string,
    readonly extras: ApiErrorExtras = {},
  ) {
    super(message)
    this.name = 'ApiError'
    this.status = statusOf(type)
    this.title = titleOf(type)
  }

  static modelSave(modelErrors: ModelErrors): ApiError {
    const first = Object.entries(modelErrors)[0]
    const message = first ? `${humanField(first[0])} ${first[1][0] ?? 'is invalid'}` : 'Model save error'
    return new ApiError('processing-failure/model-save-error', message, { modelErrors })
  }
}

function humanField(field: string): string {
  const s = field.replace(/_/g, ' ')
  return s[0]!.toUpperCase() + s.slice(1)
}

export function newInstanceId(): string {
  return crypto.randomUUID()
}

export interface ErrorBody {
  error: string
  'http-code': number
  instance: string
  title: string
  type: string
  errors?: string[]
  model_errors?: ModelErrors
  model_error_keys?: ModelErrors
}

export function errorBody(err: ApiError, instance: string): ErrorBody {
  const body: ErrorBody = {
    error: err.message,
    'http-code': err.status,
    instance,
    title: err.title,
    type: err.type,
  }
  const me = err.extras.modelErrors
  if (me) {
    body.errors = Object.entries(me).flatMap(([f, msgs]) => msgs.map((m) => `${humanField(f)} ${m}`))
    body.model_errors = me
    // No translation catalogue yet: the spec says such entries hold the English message.
    body.model_error_keys = me
  }
  return body
}
