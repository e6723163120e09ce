import crypto from 'node:crypto'
import type { FastifyReply } from 'fastify'
import { type Expression, type SelectQueryBuilder, type SqlBool, sql } from 'kysely'
import { parseDateTime } from '../api/datetime.js'
import { ERRORS } from '../api/error-factories.js'
import type { ApiError } from '../api/errors.js'
import { openCursor, signCursor } from '../security/signed-cursor.js'

/**
 * Cursor pagination, sorting and filtering for every list endpoint: one declaration per endpoint
 * (`ListSpec`), one parser, one keyset query builder. Cursors are signed, bound to the query that
 * produced them, and carry the last row's sort key, so page N costs what page 1 costs.
 */

export type FieldType = 'integer' | 'string' | 'datetime' | 'boolean'
export type FilterOp = 'filter' | 'filter_gt' | 'filter_gteq' | 'filter_lt' | 'filter_lteq' | 'filter_like'
export const FILTER_OPS: FilterOp[] = [
  'filter',
  'filter_gt',
  'filter_gteq',
  'filter_lt',
  'filter_lteq',
  'filter_like',
]

export interface ListField {
  /** Column (qualified if the query joins). */
  column: string
  type: FieldType
  /** Sort position of NULL: keyset pagination needs a total order, so NULLs sort as this value. */
  nullsAs?: number | string
  /**
   * Sort and page on this instead of the bare column (whose value the rows still carry): e.g.
   * sql`+created_at`, so that SQLite keeps to the index the query's own conditions call for.
   */
  expression?: Expression<any>
}

export interface ListSpec {
  /** Names the endpoint inside its cursors: a cursor from another list is refused. */
  name: string
  idColumn: string
  sort: Record<string, ListField>
  filter: Record<string, ListField>
  /** Forward-only lists (export results) never hand out a previous-page cursor. */
  forwardOnly?: boolean
  /** Order when the request names none (else id ascending); its cursors work as for a named sort. */
  defaultSort?: { field: string; dir: 'asc' | 'desc' }
}

export const DEFAULT_PER_PAGE = 1000
export const MAX_PER_PAGE = 10_000

export interface ListQuery {
  perPage: number
  sort: { field: string; dir: 'asc' | 'desc' } | null
  filters: { field: string; op: FilterOp; value: number | string }[]
  cursor: { dir: 'next' | 'prev'; key: (number | string)[] } | null
  binding: string
}

/**
 * The declared field a request names, or undefined: own properties only, so that a name from the
 * query string such as `constructor` or `__proto__` never finds what every object inherits.
 */
export function listField(fields: Record<string, ListField>, name: string): ListField | undefined {
  return Object.hasOwn(fields, name) ? fields[name] : undefined
}

/** The query-string keys this module reads (list routes accept them beside their own). */
export const PAGINATION_KEYS = ['cursor', 'per_page', 'page'] as const

const BRACKET = /^(sort_by|filter|filter_gt|filter_gteq|filter_lt|filter_lteq|filter_like)\[([^\]]*)\]$/

/** True for query keys that belong to sorting and filtering (`sort_by[x]`, `filter_gt[y]` …). */
export function isListParam(key: string): boolean {
  return BRACKET.test(key) || (PAGINATION_KEYS as readonly string[]).includes(key)
}

export function parseListQuery(
  spec: ListSpec,
  query: Record<string, unknown>,
  secret: string,
  /** Other parameters that shape the result (user_id …): a cursor is valid only with the same. */
  bound: Record<string, unknown> = {},
): ListQuery {
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

  let cursor: ListQuery['cursor'] = null
  const rawCursor = query['cursor']
  if (rawCursor !== undefined && rawCursor !== '') {
    if (typeof rawCursor !== 'string') throw ERRORS.invalidCursor('cursor must be a string')
    cursor = decodeCursor(rawCursor, secret, binding, sortTag(sort))
    if (cursor.dir === 'prev' && spec.forwardOnly) throw ERRORS.invalidCursor('This list pages forward only')
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

/** Which filters each kind of field takes (the Swagger document lists the same pairings). */
export const OPS_BY_TYPE: Record<FieldType, FilterOp[]> = {
  string: ['filter', 'filter_gt', 'filter_gteq', 'filter_lt', 'filter_lteq', 'filter_like'],
  integer: ['filter', 'filter_gt', 'filter_gteq', 'filter_lt', 'filter_lteq'],
  datetime: ['filter', 'filter_gt', 'filter_gteq', 'filter_lt', 'filter_lteq'],
  boolean: ['filter'],
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

// ---------- cursors ----------

const sortTag = (sort: ListQuery['sort']) => (sort ? `${sort.field}:${sort.dir}` : 'id:asc')

interface CursorPayload {
  b: string
  s: string
  d: 'n' | 'p'
  k: (number | string)[]
}

function encodeCursor(p: CursorPayload, secret: string): string {
  return signCursor('cursor', p, secret)
}

function decodeCursor(
  raw: string,
  secret: string,
  binding: string,
  sort: string,
): NonNullable<ListQuery['cursor']> {
  const p = openCursor('cursor', raw, secret) as CursorPayload
  if (p.b !== binding) throw ERRORS.invalidCursor('The cursor belongs to a different query')
  if (p.s !== sort) {
    throw ERRORS.invalidCursorTypeForSort('The cursor was made for a different sort order')
  }
  return { dir: p.d === 'p' ? 'prev' : 'next', key: p.k }
}

// ---------- query building ----------

function sortExpr(def: ListField): Expression<any> {
  if (def.expression) return def.expression
  return def.nullsAs === undefined
    ? sql.ref(def.column)
    : sql`coalesce(${sql.ref(def.column)}, ${def.nullsAs})`
}

/** Adds the filters, the keyset condition, the order and `LIMIT per_page + 1` to a select. */
export function applyListQuery<DB, TB extends keyof DB, O>(
  qb: SelectQueryBuilder<DB, TB, O>,
  spec: ListSpec,
  lq: ListQuery,
): SelectQueryBuilder<DB, TB, O> {
  let q = qb as SelectQueryBuilder<any, any, any>
  for (const f of lq.filters) {
    const def = listField(spec.filter, f.field)!
    const col = sql.ref(def.column)
    switch (f.op) {
      case 'filter':
        q =
          def.type === 'string'
            ? q.where(sql`lower(${col})`, '=', f.value.toString().toLowerCase())
            : q.where(col, '=', f.value)
        break
      case 'filter_gt':
        q = q.where(col, '>', f.value)
        break
      case 'filter_gteq':
        q = q.where(col, '>=', f.value)
        break
      case 'filter_lt':
        q = q.where(col, '<', f.value)
        break
      case 'filter_lteq':
        q = q.where(col, '<=', f.value)
        break
      case 'filter_like':
        q = q.where(sql<SqlBool>`lower(${col}) like ${likePattern(String(f.value))} escape '\\'`)
        break
    }
  }
  const sortDef = lq.sort ? listField(spec.sort, lq.sort.field)! : null
  const dir = lq.sort?.dir ?? 'asc'
  const backwards = lq.cursor?.dir === 'prev'
  const effective = backwards ? (dir === 'asc' ? 'desc' : 'asc') : dir
  const cmp = effective === 'asc' ? '>' : '<'
  const id = sql.ref(spec.idColumn)
  if (lq.cursor) {
    const key = lq.cursor.key
    if (sortDef && lq.sort?.field !== 'id') {
      const e = sortExpr(sortDef)
      // The first bound repeats what the OR says: alone, it lets the index seek to the cursor
      // (neither SQLite with bound parameters nor PostgreSQL reads a range out of the OR).
      q = q
        .where(e, `${cmp}=`, key[0])
        .where((eb: any) => eb.or([eb(e, cmp, key[0]), eb.and([eb(e, '=', key[0]), eb(id, cmp, key[1])])]))
    } else {
      q = q.where(id, cmp, key[0])
    }
  }
  if (sortDef && lq.sort?.field !== 'id') q = q.orderBy(sortExpr(sortDef), effective)
  q = q.orderBy(id, effective).limit(lq.perPage + 1)
  return q as unknown as SelectQueryBuilder<DB, TB, O>
}

/** `%` is the wildcard (decisions.md); `_` and `\` are taken literally. Without `%` it equals. */
function likePattern(v: string): string {
  return v.toLowerCase().replace(/[\\_]/g, (c) => `\\${c}`)
}

export interface Page<T> {
  items: T[]
  next: string | null
  prev: string | null
}

/** Turns the `per_page + 1` rows of `applyListQuery` into a page with its cursors. */
export function toPage<R extends Record<string, any>>(
  rows: R[],
  spec: ListSpec,
  lq: ListQuery,
  secret: string,
): Page<R> {
  const more = rows.length > lq.perPage
  const items = more ? rows.slice(0, lq.perPage) : rows.slice()
  const backwards = lq.cursor?.dir === 'prev'
  if (backwards) items.reverse()
  const sortDef = lq.sort && lq.sort.field !== 'id' ? listField(spec.sort, lq.sort.field)! : null
  const keyOf = (row: R): (number | string)[] => {
    const idv = row[column(spec.idColumn)] as number
    if (!sortDef) return [idv]
    const v = row[column(sortDef.column)] ?? sortDef.nullsAs ?? null
    return [v as number | string, idv]
  }
  const make = (row: R | undefined, d: 'n' | 'p') =>
    row ? encodeCursor({ b: lq.binding, s: sortTag(lq.sort), d, k: keyOf(row) }, secret) : null
  const hasNext = backwards ? true : more
  const hasPrev = backwards ? more : lq.cursor !== null
  return {
    items,
    next: hasNext ? make(items[items.length - 1], 'n') : null,
    prev: hasPrev && !spec.forwardOnly ? make(items[0], 'p') : null,
  }
}

const column = (qualified: string) => qualified.slice(qualified.lastIndexOf('.') + 1)

/** The cursor headers, with the Files.com names the SDKs read. */
export function setCursorHeaders(reply: FastifyReply, page: Page<unknown>): void {
  if (page.next) {
    reply.header('X-Service-Cursor-Next', page.next)
    reply.header('X-Files-Cursor-Next', page.next)
    reply.header('X-Files-Cursor', page.next)
  }
  if (page.prev) {
    reply.header('X-Service-Cursor-Prev', page.prev)
    reply.header('X-Files-Cursor-Prev', page.prev)
  }
}

/** Sets the cursor headers and gives the page's records: the body of every list route. */
export function sendPage<T>(reply: FastifyReply, page: Page<T>): T[] {
  setCursorHeaders(reply, page)
  return page.items
}
