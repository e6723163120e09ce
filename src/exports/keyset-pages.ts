import { type Kysely, type SelectQueryBuilder, sql } from 'kysely'
import type { DatabaseHandle } from '../db/database.js'
import type { ExportJob } from './export-kind.js'

export interface KeysetRead {
  table: 'webhook_attempts' | 'actions'
  db: Kysely<any>
  job: ExportJob
  pageSize: number
  signal: AbortSignal
  /** The columns (the first must be the id) and the query's own conditions. */
  select(qb: SelectQueryBuilder<any, any, object>): SelectQueryBuilder<any, any, any>
  /** Turns a row of the select into a CSV row, when SQL alone cannot. */
  mapRow?: (row: unknown[]) => unknown[]
}

interface Page<T> {
  value: T
  /** How many records the page holds, and the id of its last one (the next page starts after it). */
  count: number
  lastId: number
}

/**
 * The records of one site matching an export's query, in id order, a page at a time, each page
 * starting after the last id of the one before (so every page costs the same, and nothing holds
 * more than a page). The set is frozen when the build starts: records logged after it (a higher
 * id) are not part of it. A time range narrows the ids first, through the site-and-time index.
 * `read` runs the query of one page.
 */
async function* keyset<T>(
  r: KeysetRead,
  read: (page: SelectQueryBuilder<any, any, any>) => Promise<Page<T>>,
): AsyncIterable<T> {
  const { db, job, table } = r
  const within = (qb: SelectQueryBuilder<any, any, any>) => {
    let q = qb.where('site_id', '=', job.site_id)
    if (job.start_at !== null) q = q.where('created_at', '>=', job.start_at)
    if (job.end_at !== null) q = q.where('created_at', '<', job.end_at)
    return q
  }
  const bounds = await within(db.selectFrom(table))
    .select((eb) => [eb.fn.max('id').as('hi'), ...(job.start_at !== null ? [eb.fn.min('id').as('lo')] : [])])
    .executeTakeFirst()
  const hi = Number(bounds?.hi ?? 0)
  if (!hi) return
  let after = bounds?.lo === undefined || bounds.lo === null ? 0 : Number(bounds.lo) - 1
  for (;;) {
    r.signal.throwIfAborted()
    const page = await read(
      within(r.select(db.selectFrom(table)))
        .where('id', '>', after)
        .where('id', '<=', hi)
        .orderBy('id')
        .limit(r.pageSize),
    )
    if (page.count === 0) return
    after = page.lastId
    yield page.value
    if (page.count < r.pageSize) return
  }
}

/** The pages as rows of values (the select's columns), one array per record. */
export function keysetPages(handle: DatabaseHandle, r: KeysetRead): AsyncIterable<unknown[][]> {
  return keyset(r, async (query) => {
    const page = query.compile()
    const rows = await handle.queryArrays(page.sql, page.parameters)
    return {
      value: r.mapRow ? rows.map(r.mapRow) : rows,
      count: rows.length,
      lastId: Number(rows[rows.length - 1]?.[0]),
    }
  })
}

/**
 * The pages as blocks of CSV, put together by the database: the select must give `id` and `line`
 * (one record's CSV line); each page comes back as one value, the lines in id order, each ending
 * in CRLF. No JavaScript string or array per record: for the largest exports, that was most of
 * the cost.
 */
export function keysetCsvBlocks(
  handle: DatabaseHandle,
  r: KeysetRead,
): AsyncIterable<{ csv: Buffer; count: number }> {
  const block =
    handle.dialect.name === 'sqlite'
      ? sql`cast(group_concat(p.line, char(13, 10) order by p.id) || char(13, 10) as blob)`
      : sql`string_agg(p.line, E'\r\n' order by p.id) || E'\r\n'`
  return keyset(r, async (query) => {
    const page = r.db
      .selectFrom(query.as('p'))
      .select((eb) => [eb.fn.count('p.id').as('n'), eb.fn.max('p.id').as('last'), block.as('csv')])
      .compile()
    const [row] = await handle.queryArrays(page.sql, page.parameters)
    const count = Number(row?.[0] ?? 0)
    const csv = row?.[2]
    return {
      value: { csv: Buffer.isBuffer(csv) ? csv : Buffer.from(String(csv ?? '')), count },
      count,
      lastId: Number(row?.[1]),
    }
  })
}
