import { type Expression, type SelectQueryBuilder, type SqlBool, sql } from 'kysely'
import {
  type ListField,
  type ListQuery,
  type ListRequest,
  type ListSpec,
  listField,
  type Page,
} from '../api/list-spec.js'
import { toPage } from './list-cursor.js'

/**
 * A list request (api/list-query.ts) as SQL: its filters, the keyset condition of its cursor, its
 * order and `LIMIT per_page + 1`, added to a repository's select.
 */

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
      case 'filter_prefix':
        q = q.where(sql<SqlBool>`lower(${col}) like ${prefixPattern(String(f.value))} escape '\\'`)
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

/** Runs a repository's select as one page of a list request, with the page's cursors. */
export async function selectPage<DB, TB extends keyof DB, O extends Record<string, any>>(
  qb: SelectQueryBuilder<DB, TB, O>,
  list: ListRequest,
): Promise<Page<O>> {
  const rows = (await applyListQuery(qb, list.spec, list.query).execute()) as O[]
  return toPage(rows, list.spec, list.query, list.secret)
}

/** A prefix as a LIKE pattern: every character of it literal (`%`, `_` and `\` escaped), then `%`. */
function prefixPattern(v: string): string {
  return `${v.toLowerCase().replace(/[\\_%]/g, (c) => `\\${c}`)}%`
}

/** `%` is the wildcard (decisions.md); `_` and `\` are taken literally. Without `%` it equals. */
function likePattern(v: string): string {
  return v.toLowerCase().replace(/[\\_]/g, (c) => `\\${c}`)
}
