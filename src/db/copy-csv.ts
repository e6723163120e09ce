import { createRequire } from 'node:module'
import type pg from 'pg'
import type { to } from 'pg-copy-streams'

/** pg-copy-streams, loaded by the first export on PostgreSQL: SQLite never needs it. */
const copyTo: typeof to = (text) =>
  (createRequire(import.meta.url)('pg-copy-streams') as typeof import('pg-copy-streams')).to(text)

/** Records of CSV, each ending in CRLF, and how many. */
export interface CsvBlock {
  csv: Buffer
  count: number
}

/** About this much CSV per block: the file is written a block at a time. */
const BLOCK_BYTES = 1 << 20

/**
 * The CSV PostgreSQL writes for a `COPY … TO STDOUT (FORMAT csv)`, read as npm `pg-copy-streams`
 * streams it, turned into blocks of whole records ending in CRLF, as Wharf's CSV ends them: the
 * database ends each record with LF, and a record holds LFs of its own inside quoted fields, so a
 * record ends at an LF outside quotes (a `"` opens and closes quotes; a doubled one inside closes
 * and opens them again). A block holds about BLOCK_BYTES; a record cut between two chunks of the
 * stream waits in the block being filled until its end arrives.
 */
export class CsvRecordBlocks {
  private block = Buffer.allocUnsafe(BLOCK_BYTES)
  private used = 0
  /** Where the last whole record in `block` ends, and how many whole records it holds. */
  private ended = 0
  private count = 0
  private quoted = false

  /** Takes the next chunk of COPY's output; returns the blocks it completed. */
  push(chunk: Buffer): CsvBlock[] {
    const out: CsvBlock[] = []
    let from = 0
    let at = 0
    // Where the next quote is, computed once per quote passed (-1: none left in the chunk).
    let quote = chunk.indexOf(34, 0)
    // And the next line feed, looked for again only once passed (-1: none left).
    let lf = chunk.indexOf(10, 0)
    for (;;) {
      if (this.quoted) {
        if (quote === -1) break
        this.quoted = false
        at = quote + 1
        quote = chunk.indexOf(34, at)
        continue
      }
      if (lf !== -1 && lf < at) lf = chunk.indexOf(10, at)
      if (quote !== -1 && (lf === -1 || quote < lf)) {
        this.quoted = true
        at = quote + 1
        quote = chunk.indexOf(34, at)
        continue
      }
      if (lf === -1) break
      // A record ends here: its bytes, then CRLF.
      this.append(chunk, from, lf)
      this.ensure(2)
      this.block[this.used++] = 13
      this.block[this.used++] = 10
      this.ended = this.used
      this.count++
      from = at = lf + 1
      if (this.used >= BLOCK_BYTES) out.push(this.take())
    }
    this.append(chunk, from, chunk.length)
    return out
  }

  /** The records not yet handed on, at the end of the COPY; an unfinished record is an error. */
  end(): CsvBlock | null {
    if (this.used !== this.ended) throw new Error('COPY ended in the middle of a record')
    return this.count > 0 ? this.take() : null
  }

  /** Hands on the whole records; a record begun stays for the next block. */
  private take(): CsvBlock {
    const done = { csv: this.block.subarray(0, this.ended), count: this.count }
    const rest = this.used - this.ended
    const next = Buffer.allocUnsafe(Math.max(BLOCK_BYTES, rest * 2))
    this.block.copy(next, 0, this.ended, this.used)
    this.block = next
    this.used = rest
    this.ended = 0
    this.count = 0
    return done
  }

  private append(chunk: Buffer, from: number, to: number): void {
    if (to <= from) return
    this.ensure(to - from)
    this.used += chunk.copy(this.block, this.used, from, to)
  }

  private ensure(n: number): void {
    if (this.used + n <= this.block.length) return
    const bigger = Buffer.allocUnsafe(Math.max(this.block.length * 2, this.used + n))
    this.block.copy(bigger, 0, 0, this.used)
    this.block = bigger
  }
}

/**
 * The blocks of one COPY run on `client`, in order. The stream is read as fast as the blocks are:
 * while they wait, the socket is not read, so memory holds a block or two whatever the export's
 * size. Stopping (`signal`) fails the COPY at once, even while it waits for the server, so that
 * the reader never outlives a stopped build. Resolves `clean` once the COPY ended and every block
 * was read (the connection may go back to the pool).
 */
async function* blocksOf(
  client: pg.PoolClient,
  text: string,
  signal: AbortSignal,
  clean: { value: boolean },
): AsyncGenerator<CsvBlock> {
  signal.throwIfAborted()
  const stream = client.query(copyTo(text))
  const onAbort = () => stream.destroy(signal.reason instanceof Error ? signal.reason : new Error('aborted'))
  signal.addEventListener('abort', onAbort, { once: true })
  const records = new CsvRecordBlocks()
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      for (const block of records.push(chunk)) yield block
    }
    signal.throwIfAborted()
    const last = records.end()
    if (last) yield last
    clean.value = true
  } finally {
    signal.removeEventListener('abort', onAbort)
    if (!stream.destroyed) stream.destroy()
  }
}

/**
 * Runs `text`, a `COPY (…) TO STDOUT (FORMAT csv)`, on a connection of the pool, and yields its
 * rows as blocks of CSV records ending in CRLF. A connection left mid-COPY (an error, or a reader
 * that stopped early) is closed rather than returned to the pool.
 */
export async function* copyCsvBlocks(
  pool: pg.Pool,
  text: string,
  signal: AbortSignal,
): AsyncGenerator<CsvBlock> {
  const client = await pool.connect()
  const clean = { value: false }
  try {
    yield* blocksOf(client, text, signal, clean)
  } finally {
    client.release(clean.value ? undefined : true)
  }
}

/**
 * Connections taken two or more at a time, one taker after the other: takers that each held one
 * connection of a full pool while waiting for another would wait for ever. Whoever holds all its
 * connections gives them back when its statements end, so the one taker still waiting gets its own.
 */
const taking = new WeakMap<pg.Pool, Promise<unknown>>()

async function connectMany(pool: pg.Pool, n: number): Promise<pg.PoolClient[]> {
  const before = taking.get(pool) ?? Promise.resolve()
  const clients: pg.PoolClient[] = []
  const took = before.then(async () => {
    try {
      for (let i = 0; i < n; i++) clients.push(await pool.connect())
    } catch (err) {
      for (const c of clients) c.release()
      throw err
    }
  })
  const done = took.catch(() => {})
  taking.set(pool, done)
  try {
    await took
  } finally {
    if (taking.get(pool) === done) taking.delete(pool)
  }
  return clients
}

/**
 * Runs several `COPY (…) TO STDOUT (FORMAT csv)` at once, each on a connection of its own, so
 * that the database's backends write them in parallel; `read` gets the blocks of each (as
 * copyCsvBlocks yields them) and must read them all. Every statement reads one snapshot: the first
 * connection begins a REPEATABLE READ transaction and exports its snapshot, which the others take
 * (`SET TRANSACTION SNAPSHOT`) before any of them runs its COPY, so a transaction that commits
 * meanwhile is seen by all of them or by none. Stopping (`signal`) fails every COPY at once. Once
 * `read` is done and every COPY has ended, the connections go back to the pool; on any failure, or
 * a COPY left unread, every one of them is closed instead.
 */
export async function copyCsvInOneSnapshot<T>(
  pool: pg.Pool,
  texts: string[],
  signal: AbortSignal,
  read: (blocks: AsyncIterable<CsvBlock>[]) => Promise<T>,
): Promise<T> {
  signal.throwIfAborted()
  const clients = await connectMany(pool, texts.length)
  if (signal.aborted) {
    for (const c of clients) c.release()
    signal.throwIfAborted()
  }
  let clean = false
  try {
    const begin = 'begin isolation level repeatable read, read only'
    await clients[0]!.query(begin)
    if (clients.length > 1) {
      const { rows } = await clients[0]!.query<{ s: string }>('select pg_export_snapshot() as s')
      const snapshot = clients[0]!.escapeLiteral(rows[0]!.s)
      for (const c of clients.slice(1)) await c.query(`${begin}; set transaction snapshot ${snapshot}`)
    }
    signal.throwIfAborted()
    const ends = texts.map(() => ({ value: false }))
    const result = await read(texts.map((text, i) => blocksOf(clients[i]!, text, signal, ends[i]!)))
    if (ends.every((e) => e.value)) {
      for (const c of clients) await c.query('commit')
      clean = true
    }
    return result
  } finally {
    for (const c of clients) c.release(clean ? undefined : true)
  }
}
