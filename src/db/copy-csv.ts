import type pg from 'pg'

/** Records of CSV, each ending in CRLF, and how many. */
export interface CsvBlock {
  csv: Buffer
  count: number
}

/** About this much CSV per block: the file is written a block at a time. */
const BLOCK_BYTES = 1 << 20
/** Blocks waiting for the reader before the socket is paused. */
const QUEUED_BLOCKS = 2

/** What the driver hands a submitted query (`pg`'s Connection), as far as COPY needs it. */
interface Connection {
  query(text: string): void
  stream: { pause(): void; resume(): void }
}

/**
 * One `COPY … TO STDOUT` run through the driver's own protocol parser, which calls
 * `handleCopyData` once per CopyData message, and PostgreSQL sends each row of a COPY as exactly
 * one such message (the protocol's "COPY Operations"). That is how the end of a row is known: the
 * database ends each with LF, but a row holds LFs of its own inside quoted fields, and Wharf's CSV
 * ends records with CRLF. Rows are copied into blocks; while the reader lets blocks wait, the
 * socket is paused, so memory holds a few blocks whatever the export's size.
 */
class CopyToBlocks {
  private block = Buffer.allocUnsafe(BLOCK_BYTES)
  private used = 0
  private count = 0
  private readonly ready: CsvBlock[] = []
  private paused = false
  private connection: Connection | null = null
  private wake: (() => void) | null = null
  private error: Error | null = null
  /** The server said it is ready again: every row arrived, or the error did. */
  ended = false

  constructor(readonly text: string) {}

  submit(connection: Connection): void {
    this.connection = connection
    connection.query(this.text)
  }

  handleCopyData(msg: { chunk: Buffer }): void {
    const row = msg.chunk
    const n = row.length
    if (n === 0 || row[n - 1] !== 10) {
      this.fail(new Error('COPY sent a row that does not end with a line feed'))
      return
    }
    if (this.used + n + 1 > this.block.length) this.flush(n + 1)
    this.used += row.copy(this.block, this.used, 0, n - 1)
    this.block[this.used++] = 13
    this.block[this.used++] = 10
    this.count++
  }

  handleCommandComplete(): void {}

  handleReadyForQuery(): void {
    this.flush(0)
    this.ended = true
    this.notify()
  }

  handleError(err: Error): void {
    this.fail(err)
  }

  // Not part of a COPY's answer: a statement that is no COPY fails rather than yields nothing.
  handleRowDescription(): void {
    this.fail(new Error('not a COPY … TO STDOUT statement'))
  }
  handleDataRow(): void {}
  handleEmptyQuery(): void {
    this.fail(new Error('not a COPY … TO STDOUT statement'))
  }
  handleCopyInResponse(): void {
    this.fail(new Error('not a COPY … TO STDOUT statement'))
  }

  /** The next block, or null after the last. */
  async next(): Promise<CsvBlock | null> {
    for (;;) {
      if (this.error) throw this.error
      const block = this.ready.shift()
      if (block) {
        if (this.paused && this.ready.length < QUEUED_BLOCKS) {
          this.paused = false
          this.connection?.stream.resume()
        }
        return block
      }
      if (this.ended) return null
      await new Promise<void>((resolve) => {
        this.wake = resolve
      })
    }
  }

  /** Hands the block on when it holds rows; the next one has room for `need` bytes at least. */
  private flush(need: number): void {
    if (this.count > 0) {
      this.ready.push({ csv: this.block.subarray(0, this.used), count: this.count })
      this.block = Buffer.allocUnsafe(Math.max(BLOCK_BYTES, need))
      this.used = 0
      this.count = 0
      if (!this.paused && this.ready.length >= QUEUED_BLOCKS && !this.ended) {
        this.paused = true
        this.connection?.stream.pause()
      }
      this.notify()
    } else if (need > this.block.length) {
      this.block = Buffer.allocUnsafe(need)
    }
  }

  /** The COPY failed, or its reader stopped: next() throws this (or the earlier error). */
  stop(err: Error): void {
    this.fail(err)
  }

  get failed(): boolean {
    return this.error !== null
  }

  private fail(err: Error): void {
    this.error ??= err
    this.notify()
  }

  private notify(): void {
    const wake = this.wake
    this.wake = null
    wake?.()
  }
}

/**
 * The blocks of a submitted COPY, in order. Stopping (`signal`) fails the COPY at once, even while
 * it waits for the server, so that the reader never outlives a stopped build.
 */
async function* blocksOf(copy: CopyToBlocks, signal: AbortSignal): AsyncGenerator<CsvBlock> {
  const onAbort = () => copy.stop(signal.reason instanceof Error ? signal.reason : new Error('aborted'))
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    for (;;) {
      signal.throwIfAborted()
      const block = await copy.next()
      if (block === null) return
      yield block
    }
  } finally {
    signal.removeEventListener('abort', onAbort)
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
  const copy = new CopyToBlocks(text)
  let clean = false
  try {
    // A submittable: the driver calls its handle… methods as the server answers.
    client.query(copy as unknown as pg.QueryConfig)
    yield* blocksOf(copy, signal)
    clean = copy.ended && !copy.failed
  } finally {
    client.release(clean ? undefined : true)
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
    const copies = texts.map((text) => new CopyToBlocks(text))
    for (const [i, copy] of copies.entries()) clients[i]!.query(copy as unknown as pg.QueryConfig)
    const result = await read(copies.map((copy) => blocksOf(copy, signal)))
    if (copies.every((c) => c.ended && !c.failed)) {
      for (const c of clients) await c.query('commit')
      clean = true
    }
    return result
  } finally {
    for (const c of clients) c.release(clean ? undefined : true)
  }
}
