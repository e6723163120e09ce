import fsp from 'node:fs/promises'
import type { Kysely, SelectQueryBuilder } from 'kysely'
import { collectYoung } from '../blobs/read-buffers.js'
import type { CsvBlock } from '../db/copy-csv.js'
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

/** The export's id range where building it in two halves can help: wider than a page of ids. */
async function halvableBounds(r: KeysetRead): Promise<{ after: number; hi: number } | null> {
  const bounds = await idBounds(r)
  return bounds && bounds.hi - bounds.after > r.pageSize ? bounds : null
}

/** Ids looked up, evenly spread over an export's id range, to find the middle of its records. */
const PROBES = 1024
/** Fewer matching probes than this say too little: the middle of the id range is taken instead. */
const MIN_MATCHING_PROBES = 16

/**
 * An id that parts the export's matching records, (after, hi], into two halves of about the same
 * count: the median of the matching ids among up to PROBES evenly spaced ones (each found through
 * the primary key, the query's conditions applied), so a query that matches records mostly in one
 * part of the range still splits its records, not the range, in two. Every id when the range is no
 * wider than that (exact), the middle of the range when too few probes match.
 */
async function middleId(handle: DatabaseHandle, r: KeysetRead, after: number, hi: number): Promise<number> {
  const span = hi - after
  const n = Math.min(PROBES, span)
  const probes = Array.from({ length: n }, (_, i) => after + 1 + Math.floor((i * span) / n))
  const query = within(r, r.select(r.db.selectFrom(r.table)))
    .clearSelect()
    .select('id')
    .where('id', 'in', probes)
    .orderBy('id')
    .compile()
  const ids = (await handle.queryArrays(query.sql, query.parameters)).map((row) => Number(row[0]))
  if (ids.length === 0 || (n < span && ids.length < MIN_MATCHING_PROBES)) return after + Math.floor(span / 2)
  return ids[Math.ceil(ids.length / 2) - 1]!
}

/** Writes `header` (when given), then every block, into a new file; resolves to the record count. */
async function writeBlocks(
  file: string,
  header: Buffer | null,
  blocks: AsyncIterable<CsvBlock>,
): Promise<number> {
  let count = 0
  const fh = await fsp.open(file, 'w')
  try {
    if (header) await fh.write(header)
    for await (const block of blocks) {
      await fh.write(block.csv)
      count += block.count
    }
  } finally {
    await fh.close()
  }
  return count
}

/**
 * The same CSV as the header row followed by copiedCsvBlocks, where the database writes CSV itself
 * (PostgreSQL), built in two halves at once: two COPY statements on two connections, over the ids
 * up to the middle of the export's records and after it, read in one snapshot (so both halves see
 * the same committed records), each written straight into its own file. The database's two
 * backends then each do half of the work. Null where it cannot help: no more than a page of ids.
 */
export async function copiedCsvHalves(
  handle: DatabaseHandle,
  r: KeysetRead,
  header: Buffer,
): Promise<HalvesWriter | null> {
  const copy = handle.copyCsvInOneSnapshot
  if (!copy) return null
  const bounds = await halvableBounds(r)
  if (!bounds) return null
  const { after, hi } = bounds
  const mid = await middleId(handle, r, after, hi)
  const half = (from: number, to: number) =>
    within(r, r.select(r.db.selectFrom(r.table)))
      .where('id', '>', from)
      .where('id', '<=', to)
      .orderBy('id')
      .compile()
  return {
    async write(files) {
      const [first, second] = files as [string, string]
      // Stopping the build, or a failed half, stops both at once.
      const failed = new AbortController()
      const signal = AbortSignal.any([r.signal, failed.signal])
      return copy([half(after, mid), half(mid, hi)], signal, async ([a, b]) => {
        const written = await Promise.allSettled(
          [writeBlocks(first, header, a!), writeBlocks(second, null, b!)].map((p) =>
            p.catch((err: unknown) => {
              failed.abort(err)
              throw err
            }),
          ),
        )
        let count = 0
        for (const w of written) {
          if (w.status === 'rejected') throw w.reason
          count += w.value
        }
        return count
      })
    },
  }
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
  const bounds = await halvableBounds(r)
  if (!bounds) return null
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
      if (r.signal.aborted) onAbort()
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
            // The block's buffer lives outside the heap, which an export hardly touches
            // otherwise: without a scavenge after each, tens of MiB of spent blocks would wait.
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
