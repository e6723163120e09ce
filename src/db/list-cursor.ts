import { ERRORS } from '../api/error-factories.js'
import { parseListValues, sortTag } from '../api/list-query.js'
import { type ListQuery, type ListRequest, type ListSpec, listField, type Page } from '../api/list-spec.js'
import { openCursor, signCursor } from '../security/signed-cursor.js'

/**
 * Keyset cursors: signed with the site's secret, bound to the query that produced them, and
 * carrying the last row's sort key, so page N costs what page 1 costs.
 */

/** The list query of a request, its cursor verified: every check of api/list-query.ts, then the cursor's. */
export function parseListQuery(
  spec: ListSpec,
  query: Record<string, unknown>,
  secret: string,
  /** Other parameters that shape the result (user_id …): a cursor is valid only with the same. */
  bound: Record<string, unknown> = {},
): ListQuery {
  const values = parseListValues(spec, query, bound)
  let cursor: ListQuery['cursor'] = null
  if (values.cursor !== null) {
    cursor = decodeCursor(values.cursor, secret, values.binding, sortTag(values.sort))
    if (cursor.dir === 'prev' && spec.forwardOnly) throw ERRORS.invalidCursor('This list pages forward only')
  }
  return { ...values, cursor }
}

/** `parseListQuery` with the spec and secret kept beside the result, for the repository and `toPage`. */
export function listRequest(
  spec: ListSpec,
  query: Record<string, unknown>,
  secret: string,
  bound: Record<string, unknown> = {},
): ListRequest {
  return { spec, query: parseListQuery(spec, query, secret, bound), secret }
}

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

/** Turns the `per_page + 1` rows of a list query (db/list-sql.ts) into a page with its cursors. */
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

/**
 * A feed's page (id ascending, forward): as toPage, but the next cursor is there at the end too:
 * after the page's last record, or the request's own cursor when nothing came after it. A client
 * polls with it and resumes where it stopped, however long ago.
 */
export function toFeedPage<R extends Record<string, any>>(
  rows: R[],
  spec: ListSpec,
  lq: ListQuery,
  secret: string,
  /** The cursor as the request gave it, if any. */
  given: string | null,
): Page<R> {
  const page = toPage(rows, spec, lq, secret)
  if (page.next !== null || lq.cursor?.dir === 'prev') return page
  const last = page.items[page.items.length - 1]
  const next = last
    ? encodeCursor({ b: lq.binding, s: sortTag(lq.sort), d: 'n', k: [last[column(spec.idColumn)]] }, secret)
    : given
  return { ...page, next }
}

const column = (qualified: string) => qualified.slice(qualified.lastIndexOf('.') + 1)
