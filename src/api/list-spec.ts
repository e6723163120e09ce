import type { Expression } from 'kysely'

/**
 * What a list endpoint lets its callers sort and filter by, and the values a list request comes
 * down to: the declarations every front end and every repository share. Parsing is in
 * list-query.ts; the signed cursors are in db/list-cursor.ts, the SQL in db/list-sql.ts.
 */

export type FieldType = 'integer' | 'string' | 'datetime' | 'boolean'
export type FilterOp =
  | 'filter'
  | 'filter_gt'
  | 'filter_gteq'
  | 'filter_lt'
  | 'filter_lteq'
  | 'filter_like'
  | 'filter_prefix'
export const FILTER_OPS: FilterOp[] = [
  'filter',
  'filter_gt',
  'filter_gteq',
  'filter_lt',
  'filter_lteq',
  'filter_like',
  'filter_prefix',
]

/**
 * A sorting or filtering query key, `sort_by[field]` or `<op>[field]` for every op above, the field
 * in the one group: the request parser and the Swagger document's pattern both read keys with it.
 */
export const LIST_PARAM_PATTERN = `^(sort_by|${FILTER_OPS.join('|')})\\[([^\\]]*)\\]$`

export interface ListField {
  /** Column (qualified if the query joins). */
  column: string
  type: FieldType
  /** Sort position of NULL: keyset pagination needs a total order, so NULLs sort as this value. */
  nullsAs?: number | string
  /**
   * Sort and page on this instead of the bare column (whose value the rows still carry): e.g.
   * sql`+created_at`, so that SQLite keeps to the index the query's own conditions call for.
   * Only a type is imported here: building SQL is db/list-sql.ts's work.
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

/** A parsed list request with what it takes to sign the cursors of its page. */
export interface ListRequest {
  spec: ListSpec
  query: ListQuery
  /** The site's signing secret. */
  secret: string
}

export interface Page<T> {
  items: T[]
  next: string | null
  prev: string | null
}

/** The same page with each record turned into what the API shows. */
export function mapPage<R, T>(page: Page<R>, render: (row: R) => T): Page<T> {
  return { ...page, items: page.items.map(render) }
}

/**
 * The declared field a request names, or undefined: own properties only, so that a name from the
 * query string such as `constructor` or `__proto__` never finds what every object inherits.
 */
export function listField(fields: Record<string, ListField>, name: string): ListField | undefined {
  return Object.hasOwn(fields, name) ? fields[name] : undefined
}

/** Which filters each kind of field takes (the Swagger document lists the same pairings). */
export const OPS_BY_TYPE: Record<FieldType, FilterOp[]> = {
  // filter_prefix: the Files.com SDKs' parameter, wherever filter_like is (a prefix, taken literally).
  string: ['filter', 'filter_gt', 'filter_gteq', 'filter_lt', 'filter_lteq', 'filter_like', 'filter_prefix'],
  integer: ['filter', 'filter_gt', 'filter_gteq', 'filter_lt', 'filter_lteq'],
  datetime: ['filter', 'filter_gt', 'filter_gteq', 'filter_lt', 'filter_lteq'],
  boolean: ['filter'],
}
