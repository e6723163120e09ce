import { type ListQuery, type ListSpec, listField, type Page } from '../api/list-spec.js'
import { toPage } from './list-cursor.js'

/**
 * `applyListQuery` for a list held in memory (the app catalog): the same filters, order and keyset
 * condition over plain rows, so that its pages come out of `toPage` with the same signed cursors
 * and the same guarantees as a database list. Columns of the spec name properties of the rows;
 * the id column must be unique. Strings compare by code unit, as a binary collation would.
 */
export type ListValue = string | number | null

export function pageInMemory<R extends Record<string, unknown>>(
  rows: readonly R[],
  spec: ListSpec,
  lq: ListQuery,
  secret: string,
): Page<R> {
  const sortDef = lq.sort && lq.sort.field !== 'id' ? listField(spec.sort, lq.sort.field)! : null
  const keyOf = (row: R): ListValue[] => {
    const id = row[spec.idColumn] as ListValue
    if (!sortDef) return [id]
    return [(row[sortDef.column] as ListValue) ?? (sortDef.nullsAs as ListValue) ?? null, id]
  }
  const dir = lq.sort?.dir ?? 'asc'
  const backwards = lq.cursor?.dir === 'prev'
  const sign = (dir === 'asc') !== backwards ? 1 : -1

  let out = rows.filter((row) =>
    lq.filters.every((f) => matches(row[listField(spec.filter, f.field)!.column], f)),
  )
  out.sort((a, b) => sign * compareKeys(keyOf(a), keyOf(b)))
  if (lq.cursor) {
    const after = lq.cursor.key as ListValue[]
    out = out.filter((row) => sign * compareKeys(keyOf(row), after) > 0)
  }
  return toPage(out.slice(0, lq.perPage + 1), spec, lq, secret)
}

function compare(a: ListValue, b: ListValue): number {
  if (a === b) return 0
  if (a === null) return -1
  if (b === null) return 1
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : 1
  const x = String(a)
  const y = String(b)
  return x === y ? 0 : x < y ? -1 : 1
}

function compareKeys(a: ListValue[], b: ListValue[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const c = compare(a[i] ?? null, b[i] ?? null)
    if (c !== 0) return c
  }
  return 0
}

/** One filter as SQL would apply it: NULL matches nothing; `filter` on text ignores case. */
function matches(raw: unknown, f: ListQuery['filters'][number]): boolean {
  if (raw === null || raw === undefined) return false
  const v = (typeof raw === 'boolean' ? Number(raw) : raw) as string | number
  switch (f.op) {
    case 'filter':
      return typeof v === 'string' ? v.toLowerCase() === String(f.value).toLowerCase() : v === f.value
    case 'filter_gt':
      return compare(v, f.value) > 0
    case 'filter_gteq':
      return compare(v, f.value) >= 0
    case 'filter_lt':
      return compare(v, f.value) < 0
    case 'filter_lteq':
      return compare(v, f.value) <= 0
    case 'filter_like':
      return likeRegExp(String(f.value)).test(String(v).toLowerCase())
    case 'filter_prefix':
      return String(v).toLowerCase().startsWith(String(f.value).toLowerCase())
  }
}

/** `%` is the wildcard, everything else literal, case-insensitive (as db/list-sql.ts's LIKE). */
function likeRegExp(pattern: string): RegExp {
  const parts = pattern
    .toLowerCase()
    .split('%')
    .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
  return new RegExp(`^${parts.join('.*')}$`, 's')
}
