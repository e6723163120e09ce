import fsp from 'node:fs/promises'
import v8 from 'node:v8'
import vm from 'node:vm'
import type { Kysely, SelectQueryBuilder } from 'kysely'
import type { DatabaseHandle } from '../db/database.js'
import { buildHalfInWorker } from './csv-half-worker.js'
import type { ExportJob, HalvesWriter } from './export-kind.js'

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
  const block = handle.dialect.crlfLines('p.line', 'p.id')
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

/**
 * The same records as keysetCsvBlocks, where the database writes CSV itself (`copyCsv`,
 * PostgreSQL): one statement over the whole id range, read as blocks of records. The select
 * must give the CSV's columns, as text the way the CSV shows them.
 */
export async function* copiedCsvBlocks(
  handle: DatabaseHandle,
  r: KeysetRead,
): AsyncIterable<{ csv: Buffer; count: number }> {
  if (!handle.copyCsv) throw new Error('the database cannot write CSV itself')
  const bounds = await idBounds(r)
  if (!bounds) return
  const query = within(r, r.select(r.db.selectFrom(r.table)))
    .where('id', '>', bounds.after)
    .where('id', '<=', bounds.hi)
    .orderBy('id')
    .compile()
  yield* handle.copyCsv(query, r.signal)
}

let gc: ((opts: { type: 'minor' }) => void) | undefined
/**
 * A block's buffer lives outside V8's heap, which an export hardly touches otherwise: without a
 * look at the young generation after each block, tens of MiB of spent blocks wait for the
 * collector. V8's `gc` is reached on the first export that needs it, not at start-up.
 */
function collectYoung(): void {
  if (gc === undefined) {
    v8.setFlagsFromString('--expose-gc')
    gc = vm.runInNewContext('gc') as (opts: { type: 'minor' }) => void
  }
  gc({ type: 'minor' })
}

/**
 * The same CSV as the header row followed by keysetCsvBlocks, built in two halves at once on two
 * cores: the first half of the ids (after the header) on this connection, the second in a worker
 * thread on a read-only connection of its own (csv-half-worker.ts), each written straight into its
 * own file. Blocks cover fixed spans of `pageSize` ids, so none holds more than a page. Null where
 * it cannot help: PostgreSQL, an in-memory database, or no more than a page of ids.
 */
export async function csvHalves(
  handle: DatabaseHandle,
  r: KeysetRead,
  header: Buffer,
): Promise<HalvesWriter | null> {
  const database = handle.sqliteFile
  if (database === undefined) return null
  const bounds = await idBounds(r)
  if (!bounds || bounds.hi - bounds.after <= r.pageSize) return null
  const { after, hi } = bounds
  const mid = after + Math.floor((hi - after) / 2)
  // One statement for every block: the bounds are found by value among its parameters and set
  // for each block.
  const FROM = -7_310_001
  const TO = -7_310_002
  const compiled = r.db
    .selectFrom(
      within(r, r.select(r.db.selectFrom(r.table)))
        .where('id', '>', FROM)
        .where('id', '<=', TO)
        .as('p'),
    )
    .select((eb) => [eb.fn.count('p.id').as('n'), handle.dialect.crlfLines('p.line', 'p.id').as('csv')])
    .compile()
  const params = [...compiled.parameters]
  const fromIndex = params.indexOf(FROM)
  const toIndex = params.indexOf(TO)
  if (fromIndex === -1 || toIndex === -1) return null
  const span = r.pageSize
  return {
    async write(files) {
      const [first, second] = files as [string, string]
      // Stopping either half stops the other.
      const stop = new AbortController()
      const onAbort = () => stop.abort(r.signal.reason)
      r.signal.addEventListener('abort', onAbort, { once: true })
      const job = { database, out: second, sql: compiled.sql, params, fromIndex, toIndex, span }
      const other = buildHalfInWorker({ ...job, from: mid, to: hi }, stop.signal)
      // A failed second half stops the first at its next block, rather than after all of it.
      other.catch((err) => stop.abort(err))
      let count = 0
      try {
        const fh = await fsp.open(first, 'w')
        try {
          await fh.write(header)
          for (let from = after; from < mid; from += span) {
            stop.signal.throwIfAborted()
            const p = params.slice()
            p[fromIndex] = from
            p[toIndex] = Math.min(from + span, mid)
            const [row] = await handle.queryArrays(compiled.sql, p)
            const n = Number(row?.[0] ?? 0)
            if (n === 0) continue
            await fh.write(row![1] as Buffer)
            count += n
            collectYoung()
          }
        } finally {
          await fh.close()
        }
        return count + (await other)
      } catch (err) {
        stop.abort(err)
        throw err
      } finally {
        r.signal.removeEventListener('abort', onAbort)
      }
    },
  }
}
