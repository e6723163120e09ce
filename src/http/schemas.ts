import { type TOptional, type TSchema, type TString, Type } from '@sinclair/typebox'
import { type FieldType, type FilterOp, OPS_BY_TYPE } from './pagination.js'

/** A field that may be null: JSON keeps the null, Swagger 2 marks it x-nullable. */
export const Nullable = <T extends TSchema>(t: T) =>
  Type.Unsafe<T['static'] | null>({ ...t, type: [t['type'] as string, 'null'], 'x-nullable': true })

export const DateTime = (description?: string) =>
  Nullable(Type.String({ format: 'date-time', ...(description ? { description } : {}) }))

/** int64 ids in paths and bodies (decisions.md: ids are int64 integers). */
export const Id = (description?: string) =>
  Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, ...(description ? { description } : {}) })

/** `user_id` of list queries: a user id, or 0 for the caller. */
export const UserIdParam = Type.Integer({
  minimum: 0,
  maximum: Number.MAX_SAFE_INTEGER,
  description: 'User id; 0 = the caller',
})

export const IdParams = Type.Object({ id: Id('Record id') }, { additionalProperties: false })

/** Every body may repeat the record's id (the Files.com SDKs send it on update and delete). */
export const EchoId = Type.Optional(Id('Same as the id in the path'))

// Not Type.Record: its patternProperties reach Swagger 2 as `additionalProperties: string`.
const MessagesByField = (description: string) =>
  Type.Unsafe<Record<string, string[]>>(
    Type.Object({}, { additionalProperties: Type.Array(Type.String()), description }),
  )

export const ErrorSchema = Type.Object(
  {
    error: Type.String(),
    'http-code': Type.Integer(),
    instance: Type.String(),
    title: Type.String(),
    type: Type.String(),
    errors: Type.Optional(Type.Array(Type.String())),
    model_errors: Type.Optional(MessagesByField('Parameter name → messages')),
    model_error_keys: Type.Optional(MessagesByField('Parameter name → translation keys (or messages)')),
  },
  { description: 'Error' },
)

/** The error responses every authenticated route can give, for the Swagger document. */
export const errorResponses = {
  400: ErrorSchema,
  401: ErrorSchema,
  403: ErrorSchema,
  404: ErrorSchema,
  422: ErrorSchema,
  429: ErrorSchema,
}

const LIST_PARAM_PATTERN =
  '^(sort_by|filter|filter_gt|filter_gteq|filter_lt|filter_lteq|filter_like)\\[[^\\]]*\\]$'

/**
 * Query-string schema of a list endpoint: its own parameters plus cursor, per_page, page (the
 * Files.com SDK adds it while auto-paginating; ignored) and the bracketed sort/filter keys.
 * Given the endpoint's ListSpec, its valid `sort_by[field]` and `filter_*[field]` keys are also
 * declared one by one, so that the Swagger document lists them; any other bracketed key still
 * reaches parseListQuery, which names the valid fields in its error.
 */
export function listQuery<P extends Record<string, TSchema>>(props: P, spec?: ListFields) {
  return Type.Object(
    {
      ...props,
      ...(spec ? listFieldParams(spec) : {}),
      cursor: Type.Optional(
        Type.String({ maxLength: 4096, description: 'Cursor from X-Service-Cursor-Next or -Prev' }),
      ),
      per_page: Type.Optional(Type.String({ description: 'Records per page: 1 to 10,000 (default 1,000)' })),
      page: Type.Optional(
        Type.String({ description: 'Ignored; sent by the Files.com SDKs while paginating' }),
      ),
    },
    {
      additionalProperties: false,
      patternProperties: { [LIST_PARAM_PATTERN]: Type.String({ maxLength: 5000 }) },
    },
  )
}

/** The part of a ListSpec that shapes the query string. */
export interface ListFields {
  sort: Record<string, unknown>
  filter: Record<string, { type: FieldType }>
}

const OP_MEANING: Record<FilterOp, string> = {
  filter: 'equal to',
  filter_gt: 'greater than',
  filter_gteq: 'greater than or equal to',
  filter_lt: 'less than',
  filter_lteq: 'less than or equal to',
  filter_like: 'matching (SQL LIKE, % wildcard; case-insensitive)',
}

function listFieldParams(spec: ListFields): Record<string, TOptional<TString>> {
  const out: Record<string, TOptional<TString>> = {}
  for (const field of Object.keys(spec.sort)) {
    out[`sort_by[${field}]`] = Type.Optional(
      Type.String({ maxLength: 5000, description: `Sort by ${field}: asc or desc` }),
    )
  }
  for (const [field, def] of Object.entries(spec.filter)) {
    for (const op of OPS_BY_TYPE[def.type]) {
      out[`${op}[${field}]`] = Type.Optional(
        Type.String({
          maxLength: 5000,
          description: `Only records whose ${field} is ${OP_MEANING[op]} this`,
        }),
      )
    }
  }
  return out
}
