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
    for (;;) {
      signal.throwIfAborted()
      const block = await copy.next()
      if (block === null) break
      yield block
    }
    clean = copy.ended
  } finally {
    client.release(clean ? undefined : true)
  }
}
