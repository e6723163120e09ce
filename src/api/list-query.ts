import crypto from 'node:crypto'
import { parseDateTime } from './datetime.js'
import { ERRORS } from './error-factories.js'
import type { ApiError } from './errors.js'
import {
  DEFAULT_PER_PAGE,
  FILTER_OPS,
  type FilterOp,
  LIST_PARAM_PATTERN,
  type ListField,
  type ListQuery,
  type ListSpec,
  listField,
  MAX_PER_PAGE,
  OPS_BY_TYPE,
} from './list-spec.js'

/**
 * A list request's query values (cursor, per_page, sort_by[…], filter_*[…]) checked against the
 * endpoint's `ListSpec`: one parser for every list, whatever front end received the request. The
 * cursor is read here as text only; its signature is checked, and its key read, where the
 * site's secret is at hand (db/list-cursor.ts).
 */

/** A list query with its cursor as the client sent it (not yet verified). */
export type ListValues = Omit<ListQuery, 'cursor'> & { cursor: string | null }

/** What a cursor says it was made for: the sort it pages (id ascending without one). */
export const sortTag = (sort: ListQuery['sort']) => (sort ? `${sort.field}:${sort.dir}` : 'id:asc')

/** The query-string keys this module reads (list routes accept them beside their own). */
export const PAGINATION_KEYS = ['cursor', 'per_page', 'page'] as const

const BRACKET = new RegExp(LIST_PARAM_PATTERN)

/** True for query keys that belong to sorting and filtering (`sort_by[x]`, `filter_gt[y]` …). */
export function isListParam(key: string): boolean {
  return BRACKET.test(key) || (PAGINATION_KEYS as readonly string[]).includes(key)
}

export function parseListValues(
  spec: ListSpec,
  query: Record<string, unknown>,
  /** Other parameters that shape the result (user_id …): a cursor is valid only with the same. */
  bound: Record<string, unknown> = {},
): ListValues {
  const perPage = parsePerPage(query['per_page'])
  let sort: ListQuery['sort'] = null
  const filters: ListQuery['filters'] = []

  for (const [key, raw] of Object.entries(query)) {
    const nested = typeof raw === 'object' && raw !== null && !Array.isArray(raw)
    const entries: [string, string, unknown][] = []
    const m = BRACKET.exec(key)
    if (m) entries.push([m[1]!, m[2]!, raw])
    else if (nested && (key === 'sort_by' || (FILTER_OPS as string[]).includes(key))) {
      for (const [f, v] of Object.entries(raw as Record<string, unknown>)) entries.push([key, f, v])
    } else continue
    for (const [kind, field, value] of entries) {
      if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
        throw ERRORS.requestParamsInvalid(`${kind}[${field}] must be given once, as a single value`)
      }
      const v = String(value)
      if (kind === 'sort_by') {
        const def = listField(spec.sort, field)
        if (!def) throw invalidField('sort_by', field, Object.keys(spec.sort))
        const dir = v.toLowerCase()
        if (dir !== 'asc' && dir !== 'desc') {
          throw ERRORS.requestParamsInvalid(`sort_by[${field}] must be asc or desc`)
        }
        if (sort) throw ERRORS.invalidFilterCombination('sort_by takes one field at a time')
        sort = { field, dir }
      } else {
        const def = listField(spec.filter, field)
        if (!def) throw invalidField(kind, field, Object.keys(spec.filter))
        filters.push({ field, op: kind as FilterOp, value: filterValue(kind as FilterOp, field, def, v) })
      }
    }
  }
  if (!sort && spec.defaultSort) sort = { ...spec.defaultSort }
  filters.sort((a, b) => (a.field + a.op).localeCompare(b.field + b.op))
  const binding = crypto
    .createHash('sha256')
    .update(JSON.stringify([spec.name, filters, Object.entries(bound).sort()]))
    .digest('base64url')
    .slice(0, 22)

  let cursor: string | null = null
  const rawCursor = query['cursor']
  if (rawCursor !== undefined && rawCursor !== '') {
    if (typeof rawCursor !== 'string') throw ERRORS.invalidCursor('cursor must be a string')
    cursor = rawCursor
  }
  return { perPage, sort, filters, cursor, binding }
}

export function parsePerPage(raw: unknown): number {
  if (raw === undefined || raw === '') return DEFAULT_PER_PAGE
  const s = String(raw)
  if (!/^\d+$/.test(s) || Number(s) < 1 || Number(s) > MAX_PER_PAGE) {
    throw ERRORS.requestParamsInvalid(`per_page must be a whole number from 1 to ${MAX_PER_PAGE}`)
  }
  return Number(s)
}

function invalidField(kind: string, field: string, valid: string[]): ApiError {
  const list = valid.length ? valid.join(', ') : 'none'
  return ERRORS.invalidFilterField(`${kind}[${field}] is not supported here (valid fields: ${list})`)
}

function filterValue(op: FilterOp, field: string, def: ListField, v: string): number | string {
  if (!OPS_BY_TYPE[def.type].includes(op)) {
    throw ERRORS.invalidFilterCombination(
      `${op}[${field}]: a ${def.type} field takes only ${OPS_BY_TYPE[def.type].join(', ')}`,
    )
  }
  switch (def.type) {
    case 'string':
      return v
    case 'integer':
      if (!/^-?\d+$/.test(v)) throw ERRORS.requestParamsInvalid(`${op}[${field}] must be an integer`)
      return Number(v)
    case 'datetime':
      return parseDateTime(v, `${op}[${field}]`)
    case 'boolean':
      if (!/^(true|false|1|0)$/.test(v))
        throw ERRORS.requestParamsInvalid(`${op}[${field}] must be true or false`)
      return v === 'true' || v === '1' ? 1 : 0
  }
}
