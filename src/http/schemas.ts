import { type TOptional, type TSchema, Type } from '@sinclair/typebox'
import { TEXT_PATTERNS, type TextShape } from '../api/control-characters.js'
import { DATE_TIME_FORMS } from '../api/datetime.js'
import {
  type FieldType,
  type FilterOp,
  LIST_PARAM_PATTERN,
  MAX_PER_PAGE,
  OPS_BY_TYPE,
} from '../api/list-spec.js'
import { checked, exclusive, MAX_PATH_LENGTH, NEW_PATH_PATTERN, PATH_PATTERN } from './field-checks.js'

/** A field that may be null: JSON keeps the null, Swagger 2 marks it x-nullable. */
export const Nullable = <T extends TSchema>(t: T) =>
  Type.Unsafe<T['static'] | null>({ ...t, type: [t['type'] as string, 'null'], 'x-nullable': true })

/** A string from a closed set, typed as that set (the schema is TypeBox's string with `enum`). */
export const StringEnum = <const T extends string>(
  values: readonly T[],
  options: { description?: string } = {},
) => Type.Unsafe<T>({ enum: [...values], ...options, type: 'string' })

export const DateTime = (description?: string) =>
  Nullable(Type.String({ format: 'date-time', ...(description ? { description } : {}) }))

/**
 * A date-time a request gives: documented as `format: date-time`, taken in every form the parser
 * takes (the format is the parser's, see app.ts); unreadable: 400 bad-request/datetime-parse.
 * Empty is no date, refused as unreadable (`minLength: 1`), unless the field takes `blank` to
 * mean "none" (its description must say so).
 */
export const DateTimeText = (description: string, { blank = false }: { blank?: boolean } = {}) =>
  Type.String({
    format: 'date-time',
    ...(blank ? {} : { minLength: 1 }),
    maxLength: 64,
    description: `${description}. ${DATE_TIME_FORMS}`,
  })

const TEXT_RULES: Record<TextShape, string> = {
  line: 'one line: no control characters, no bidirectional embeddings, overrides or isolates',
  lines:
    'line breaks and tabs allowed; no other control characters, no bidirectional embeddings, overrides or isolates',
}

/**
 * Free text a person types and others read: at most `maxLength` characters, without the
 * characters control-characters.ts refuses (400 bad-request/request-params-contain-invalid-character,
 * from validation, body and query alike). `lines` for text that is multi-line by nature.
 */
export const FreeText = (maxLength: number, shape: TextShape, description?: string) =>
  Type.String({
    maxLength,
    pattern: TEXT_PATTERNS[shape],
    description: description ? `${description} (${TEXT_RULES[shape]})` : `Free text (${TEXT_RULES[shape]})`,
    ...checked(shape === 'line' ? 'text' : 'text-lines'),
  })

const PATH_RULES =
  'slashes around it are ignored; no empty, "." or ".." segments, no control characters; at most 5000 characters'

/** A path a request names: the rules of normalizePath (refusals: invalid-path, path-too-long). */
export const PathText = (description: string) =>
  Type.String({
    maxLength: MAX_PATH_LENGTH,
    pattern: PATH_PATTERN,
    description: `${description} (${PATH_RULES})`,
    ...checked('path'),
  })

/** A path about to exist: also not the root, and no name ending in whitespace. */
export const NewPathText = (description: string) =>
  Type.String({
    maxLength: MAX_PATH_LENGTH,
    pattern: NEW_PATH_PATTERN,
    description: `${description} (${PATH_RULES}; not the root; no name ending in whitespace)`,
    ...checked('new-path'),
  })

/** The file path of the wildcard routes, as the Swagger document names it. */
export const FilePathParams = Type.Object({
  path: Type.String({
    maxLength: MAX_PATH_LENGTH,
    pattern: PATH_PATTERN,
    description: `File or folder path: raw slashes, or encoded as %2F (${PATH_RULES})`,
  }),
})

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

export const SAME_AS_PATH_ID = 'Must equal the id in the path (the Files.com SDKs repeat it)'

/** Every body may repeat the record's id (the Files.com SDKs send it on update and delete). */
export const EchoId = Type.Optional(Id(SAME_AS_PATH_ID))

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

/** The query of a signed link (upload part, download of an export or a billing PDF). */
export const SignedLinkQuery = Type.Object(
  {
    expires: Type.Optional(Type.String({ maxLength: 20, description: 'Epoch seconds' })),
    signature: Type.Optional(Type.String({ maxLength: 128 })),
  },
  { additionalProperties: false },
)

/**
 * A file behind a signed link, by record id: the bytes, or an error in JSON or XML when the link
 * is bad (400) or expired or forged (401).
 */
export const signedFileSchema = (produces: string) => ({
  security: [],
  produces: [produces, 'application/json', 'application/xml'],
  params: IdParams,
  querystring: SignedLinkQuery,
  response: { 200: Type.String({ format: 'binary' }), 400: ErrorSchema, 401: ErrorSchema },
})

export const PerPage = Type.Optional(
  Type.Integer({
    minimum: 1,
    maximum: MAX_PER_PAGE,
    description: 'Records per page: 1 to 10,000 (default 1,000)',
  }),
)
export const Page = Type.Optional(
  Type.Integer({ description: 'Ignored; sent by the Files.com SDKs while paginating' }),
)

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
      per_page: PerPage,
      page: Page,
    },
    {
      additionalProperties: false,
      // Keys of fields the endpoint does not have: parseListQuery names the valid ones.
      patternProperties: {
        [LIST_PARAM_PATTERN]: Type.Unsafe({ type: ['string', 'integer', 'boolean'], maxLength: 5000 }),
      },
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
  filter_prefix: 'starting with (taken literally, % and _ too; case-insensitive)',
}

function listFieldParams(spec: ListFields): Record<string, TOptional<TSchema>> {
  const out: Record<string, TOptional<TSchema>> = {}
  for (const field of Object.keys(spec.sort)) {
    out[`sort_by[${field}]`] = Type.Optional(
      Type.Unsafe<'asc' | 'desc'>({
        type: 'string',
        enum: ['asc', 'desc'],
        description: `Sort by ${field} (one sort_by per request)`,
        ...checked('sort'),
        ...exclusive('sort_by'),
      }),
    )
  }
  for (const [field, def] of Object.entries(spec.filter)) {
    for (const op of OPS_BY_TYPE[def.type]) {
      const description = `Only records whose ${field} is ${OP_MEANING[op]} this`
      out[`${op}[${field}]`] = Type.Optional(filterValue(def.type, description))
    }
  }
  return out
}

function filterValue(type: FieldType, description: string): TSchema {
  switch (type) {
    case 'integer':
      return Type.Integer({ description })
    case 'boolean':
      return Type.Boolean({ description, ...checked('flag') })
    case 'datetime':
      return DateTimeText(description)
    case 'string':
      return Type.String({ maxLength: 5000, description })
  }
}
