import type { FastifyRequest } from 'fastify'

/**
 * Strict conversion of text to the types a schema asks for. Path and query values are always
 * text, and so are the fields of an XML body (unless typed by an attribute); JSON bodies carry
 * their own types and are never converted. Only unambiguous spellings convert: a decimal integer
 * without leading zeros (`0x10`, `01`, `1e3` and ` 1` stay text), `true` / `false`. Anything else
 * is left as it is, for validation to refuse with the field named. A lone value where the schema
 * wants a list is a list of one (a repeated query key or an XML list without `type="array"` is
 * the only way text says "list").
 */

type Schema = Record<string, unknown>

const INTEGER = /^-?(0|[1-9]\d*)$/
const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?$/

function typesOf(schema: Schema): string[] {
  const t = schema['type']
  return Array.isArray(t) ? (t as string[]) : typeof t === 'string' ? [t] : []
}

/** `value` (text, or a structure of text) converted as far as `schema` says; else unchanged. */
export function fromText(schema: unknown, value: unknown): unknown {
  if (schema === null || typeof schema !== 'object') return value
  const s = schema as Schema
  const types = typesOf(s)
  if (typeof value === 'string') {
    if (types.length === 0 || types.includes('string')) return value
    if (types.includes('integer') && INTEGER.test(value)) return Number(value)
    if (types.includes('number') && NUMBER.test(value)) return Number(value)
    if (types.includes('boolean') && (value === 'true' || value === 'false')) return value === 'true'
    if (types.includes('array')) return [fromText(s['items'], value)]
    return value
  }
  if (Array.isArray(value)) {
    if (types.includes('array')) return value.map((v) => fromText(s['items'], v))
    return value
  }
  if (value !== null && typeof value === 'object' && types.includes('object')) {
    return fromTextFields(s, value as Record<string, unknown>)
  }
  return value
}

/** The fields of an object converted by the object schema's properties (only `keys`, if given). */
export function fromTextFields(
  schema: unknown,
  fields: Record<string, unknown>,
  keys: Iterable<string> = Object.keys(fields),
): Record<string, unknown> {
  const s = (schema ?? {}) as Schema
  const props = (s['properties'] ?? {}) as Record<string, unknown>
  const extra = typeof s['additionalProperties'] === 'object' ? s['additionalProperties'] : undefined
  for (const key of keys) {
    if (!Object.hasOwn(fields, key)) continue
    const fieldSchema = Object.hasOwn(props, key) ? props[key] : extra
    if (fieldSchema !== undefined) fields[key] = fromText(fieldSchema, fields[key])
  }
  return fields
}

const XML_BODY = /^[^;]*\bxml\s*(;|$)/i

/**
 * preValidation of body-carrying routes. Query parameters work for every method, so they are
 * merged under the body (a body field wins); being text they are converted by the body schema,
 * as are all fields of an XML body. The JSON body's own fields keep their JSON types.
 */
export async function prepareBody(request: FastifyRequest): Promise<void> {
  const query = (request.query ?? {}) as Record<string, unknown>
  const body = request.body
  if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body))) return
  const schema = request.routeOptions.schema?.body
  const own = (body ?? {}) as Record<string, unknown>
  if (body && XML_BODY.test(request.headers['content-type'] ?? '')) fromTextFields(schema, own)
  const fromQuery = Object.keys(query).filter((k) => !Object.hasOwn(own, k))
  if (fromQuery.length === 0 && body) return
  const merged = { ...query, ...own }
  request.body = fromTextFields(schema, merged, fromQuery)
}
