import type { Kysely, SelectQueryBuilder } from 'kysely'
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

/**
 * The records of one site matching an export's query, in id order, a page at a time, each page
 * starting after the last id of the one before (so every page costs the same, and nothing holds
 * more than a page). The set is frozen when the build starts: records logged after it (a higher
 * id) are not part of it. A time range narrows the ids first, through the site-and-time index.
 */
export async function* keysetPages(handle: DatabaseHandle, r: KeysetRead): AsyncIterable<unknown[][]> {
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
    const page = within(r.select(db.selectFrom(table)))
      .where('id', '>', after)
      .where('id', '<=', hi)
      .orderBy('id')
      .limit(r.pageSize)
      .compile()
    const rows = await handle.queryArrays(page.sql, page.parameters)
    if (rows.length === 0) return
    after = Number(rows[rows.length - 1]![0])
    yield r.mapRow ? rows.map(r.mapRow) : rows
    if (rows.length < r.pageSize) return
  }
}
