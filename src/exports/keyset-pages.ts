import { type Kysely, type SelectQueryBuilder, sql } from 'kysely'
import type { DatabaseHandle } from '../db/database.js'
import type { SqliteReader } from '../db/sqlite-reader.js'
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

/** The site and time range of the job, on any select of the table. */
function within(r: KeysetRead, qb: SelectQueryBuilder<any, any, any>) {
  let q = qb.where('site_id', '=', r.job.site_id)
  if (r.job.start_at !== null) q = q.where('created_at', '>=', r.job.start_at)
  if (r.job.end_at !== null) q = q.where('created_at', '<', r.job.end_at)
  return q
}

/**
 * The ids the export covers: after `after`, up to and including `hi`. The set is frozen when the
 * build starts: records logged after it (a higher id) are not part of it. A time range narrows the
 * ids first, through the site-and-time index. Null when there is nothing to read.
 */
async function idBounds(r: KeysetRead): Promise<{ after: number; hi: number } | null> {
  const bounds = await within(r, r.db.selectFrom(r.table))
    .select((eb) => [
      eb.fn.max('id').as('hi'),
      ...(r.job.start_at !== null ? [eb.fn.min('id').as('lo')] : []),
    ])
    .executeTakeFirst()
  const hi = Number(bounds?.hi ?? 0)
  if (!hi) return null
  const after = bounds?.lo === undefined || bounds.lo === null ? 0 : Number(bounds.lo) - 1
  return { after, hi }
}

/**
 * The records of one site matching an export's query, in id order, a page at a time, each page
 * starting after the last id of the one before (so every page costs the same, and nothing holds
 * more than a page). `read` runs the query of one page.
 */
async function* keyset<T>(
  r: KeysetRead,
  read: (page: SelectQueryBuilder<any, any, any>) => Promise<Page<T>>,
): AsyncIterable<T> {
  const bounds = await idBounds(r)
  if (!bounds) return
  let after = bounds.after
  for (;;) {
    r.signal.throwIfAborted()
    const page = await read(
      within(r, r.select(r.db.selectFrom(r.table)))
        .where('id', '>', after)
        .where('id', '<=', bounds.hi)
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

type Runner = (sql: string, params: readonly unknown[]) => Promise<unknown[][]>

/**
 * The pages as blocks of CSV, put together by the database: the select must give `id` and `line`
 * (one record's CSV line); each block comes back as one value, the lines in id order, each ending
 * in CRLF. No JavaScript string or array per record: for the largest exports, that was most of
 * the cost.
 *
 * Blocks cover fixed spans of ids (half a page each when two are built at once, so that memory
 * holds about what one page took), which makes them independent of each other: two connections build them at once, on two cores, and they are
 * handed on in order. On SQLite the second connection is a read-only one in a worker thread; on
 * PostgreSQL, a second connection of the pool.
 */
export async function* keysetCsvBlocks(
  handle: DatabaseHandle,
  r: KeysetRead,
): AsyncIterable<{ csv: Buffer; count: number }> {
  const block =
    handle.dialect.name === 'sqlite'
      ? sql`cast(group_concat(p.line, char(13, 10) order by p.id) || char(13, 10) as blob)`
      : sql`string_agg(p.line, E'\r\n' order by p.id) || E'\r\n'`
  const bounds = await idBounds(r)
  if (!bounds) return
  const { after, hi } = bounds
  const runners: Runner[] = [handle.queryArrays]
  let reader: SqliteReader | undefined
  if (hi - after > r.pageSize) {
    if (handle.openReader) {
      // Without a second connection (a thread that cannot start), the build is only slower.
      reader = await handle.openReader().catch(() => undefined)
      if (reader) runners.push(reader.queryArrays)
    } else if (handle.dialect.name === 'postgres') {
      runners.push(handle.queryArrays)
    }
  }
  // Two blocks are built at once: each spans half a page, so memory holds what one page took.
  const span = Math.ceil(r.pageSize / runners.length)
  const blocks = Math.ceil((hi - after) / span)
  const compiled = (k: number) => {
    const from = after + k * span
    const query = within(r, r.select(r.db.selectFrom(r.table)))
      .where('id', '>', from)
      .where('id', '<=', Math.min(from + span, hi))
    return r.db
      .selectFrom(query.as('p'))
      .select((eb) => [eb.fn.count('p.id').as('n'), block.as('csv')])
      .compile()
  }
  // Block k goes to runner k mod 2; each runner takes its blocks one after another.
  const pending = new Map<number, Promise<unknown[][]>>()
  let launched = 0
  try {
    for (let k = 0; k < blocks; k++) {
      r.signal.throwIfAborted()
      while (launched < blocks && launched < k + runners.length) {
        const q = compiled(launched)
        const result = runners[launched % runners.length]!(q.sql, q.parameters)
        // Awaited in its turn below; a build that stops early must not leave it unhandled.
        result.catch(() => {})
        pending.set(launched++, result)
      }
      const [row] = await pending.get(k)!
      pending.delete(k)
      const count = Number(row?.[0] ?? 0)
      if (count === 0) continue
      const csv = row?.[1]
      // A Buffer from the main connection; a plain Uint8Array from the worker (structured clone).
      const bytes =
        csv instanceof Uint8Array
          ? Buffer.from(csv.buffer, csv.byteOffset, csv.byteLength)
          : Buffer.from(String(csv ?? ''))
      yield { csv: bytes, count }
    }
  } finally {
    await reader?.close()
  }
}
