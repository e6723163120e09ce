import { createRequire } from 'node:module'
import { type Readable, Transform, type TransformCallback } from 'node:stream'
import zlib from 'node:zlib'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type yazlModule from 'yazl'

/**
 * yazl checksums every byte it zips with buffer-crc32, a table loop in JavaScript: 390 MB/s on
 * Wharf's 2-vCPU machine, on the event loop, which held a ZIP of 1 GiB to 0.45 of a plain
 * download. Node's own zlib.crc32 is the same CRC-32 (a test compares them) at 4.6 GB/s: yazl's
 * copy of the module is given it.
 */
export function useNativeCrc32(): void {
  const crc32 = createRequire(createRequire(import.meta.url).resolve('yazl'))('buffer-crc32') as {
    unsigned: (buf: Buffer, previous?: number) => number
  }
  crc32.unsigned = (buf, previous) => zlib.crc32(buf, previous ?? 0)
}

let yazlLoaded: typeof yazlModule | undefined
/** yazl, loaded by the first ZIP (with Node's CRC-32 given to it): most servers never make one. */
function yazl(): typeof yazlModule {
  if (yazlLoaded) return yazlLoaded
  useNativeCrc32()
  yazlLoaded = createRequire(import.meta.url)('yazl') as typeof yazlModule
  return yazlLoaded
}

/** One file of a ZIP: its name inside it, its size and time, and how to open it. */
export interface ZipFileEntry {
  name: string
  size: number
  mtime: number
  /** The bytes, asked for only when the ZIP reaches this entry. */
  open(): Promise<Readable>
}

/** Reads recorded but not yet written, at most: past it, the ZIP waits for the database. */
const RECORDS_AHEAD = 256

/**
 * The reads of a ZIP's entries, recorded as the ZIP reaches them, many to a transaction: a
 * transaction per file cost more than streaming a 1 MiB file (docs/performance.md, "Share
 * links"). While one batch is written the next gathers; `add` waits only when RECORDS_AHEAD are
 * unwritten. A failed write fails every later `add` and `drain`.
 */
class BatchedRecords<E> {
  private queued: E[] = []
  private inFlight = 0
  private writing: Promise<void> | null = null
  private failure: Error | null = null

  constructor(private readonly write: (batch: E[]) => Promise<void>) {}

  async add(entry: E): Promise<void> {
    if (this.failure) throw this.failure
    this.queued.push(entry)
    this.kick()
    while (this.writing && this.queued.length + this.inFlight > RECORDS_AHEAD) await this.writing
    if (this.failure) throw this.failure
  }

  /** Resolves once every record added is written. */
  async drain(): Promise<void> {
    for (;;) {
      this.kick()
      if (!this.writing) break
      await this.writing
    }
    if (this.failure) throw this.failure
  }

  private kick(): void {
    if (this.writing || this.failure || this.queued.length === 0) return
    const batch = this.queued
    this.queued = []
    this.inFlight = batch.length
    this.writing = this.write(batch)
      .catch((err: Error) => {
        this.failure ??= err
      })
      .finally(() => {
        this.writing = null
        this.inFlight = 0
      })
  }
}

/**
 * Holds back the ZIP's last chunk (its central directory, without which no reader opens it)
 * until every read is recorded: a ZIP whose records could not be written ends cut short.
 */
class UntilRecorded extends Transform {
  private last: Buffer | null = null

  constructor(private readonly recorded: () => Promise<void>) {
    super()
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    const before = this.last
    this.last = chunk
    done(null, before ?? undefined)
  }

  override _flush(done: TransformCallback): void {
    this.recorded().then(
      () => done(null, this.last ?? undefined),
      (err: Error) => done(err),
    )
  }
}

/**
 * Streams a ZIP (yazl, stored not compressed, ZIP64 when large, no temporary file): the folders,
 * then each file opened as the ZIP reaches it, its read recorded with `record` (in batches: see
 * BatchedRecords). A file lost mid-way, or reads that cannot be recorded, cannot become an error
 * response any more (the status line has gone out): the ZIP is cut short.
 */
export function sendZip<E extends ZipFileEntry>(
  request: FastifyRequest,
  reply: FastifyReply,
  zip: {
    name: string
    directories: string[]
    entries: E[]
    now: number
    record: (reached: E[]) => Promise<void>
  },
): FastifyReply {
  const out = new (yazl().ZipFile)()
  const records = new BatchedRecords(zip.record)
  const body = new UntilRecorded(() => records.drain())
  for (const dir of zip.directories) out.addEmptyDirectory(dir, { mtime: new Date(zip.now) })
  // The next file is opened while this one streams: opening one (its blob's layout, a file
  // handle, on S3 a request) took longer than sending a 1 MiB file, and the ZIP stood still.
  let ahead: { index: number; stream: Promise<Readable> } | null = null
  const openAt = (index: number): Promise<Readable> => {
    const stream = ahead?.index === index ? ahead.stream : zip.entries[index]!.open()
    ahead = null
    if (index + 1 < zip.entries.length) {
      const next = zip.entries[index + 1]!.open()
      next.catch(() => undefined) // its error, if any, is met when the ZIP reaches it
      ahead = { index: index + 1, stream: next }
    }
    return stream
  }
  for (const [index, entry] of zip.entries.entries()) {
    out.addReadStreamLazy(
      entry.name,
      { size: entry.size, mtime: new Date(entry.mtime), compress: false },
      (cb) => {
        openAt(index)
          .then(async (stream) => {
            try {
              await records.add(entry)
            } catch (err) {
              stream.destroy()
              throw err
            }
            cb(null, stream)
          })
          .catch((err: Error) => cb(err, undefined as never))
      },
    )
  }
  const cut = (err: Error) => {
    request.log.warn({ err }, 'ZIP cut short')
    body.destroy(err)
  }
  out.on('error', cut)
  body.on('error', (err: Error) => request.log.warn({ err }, 'ZIP cut short'))
  const zipped = out.outputStream as unknown as Readable
  zipped.on('error', cut)
  zipped.pipe(body)
  // A visitor who goes away stops the reading, and the file opened ahead is closed.
  body.on('close', () => {
    if (!zipped.readableEnded) zipped.destroy()
    void ahead?.stream.then((s) => s.destroy()).catch(() => undefined)
    ahead = null
  })
  out.end()
  return reply
    .code(200)
    .header('Content-Type', 'application/zip')
    .header('Content-Disposition', `attachment; filename="${zip.name.replace(/[^A-Za-z0-9_.-]/g, '_')}"`)
    .send(body)
}
