import type { Readable } from 'node:stream'
import { ERRORS } from '../api/error-factories.js'
import {
  type FileWriter,
  type FsEntry,
  PROTOCOL_READ_BYTES,
  type ReadableFile,
} from '../modules/files/vfs/file-system.js'
import type { ParkableRead, ReadStreams } from './sftp-read-streams.js'
import type { WriteBudget } from './sftp-write-budget.js'

/**
 * Bytes of out-of-order writes a handle holds while waiting for the gap before them. Clients
 * pipeline writes in offset order (OpenSSH's sftp, rclone, curl), so this is rarely used; a
 * client that writes further ahead, or backwards, is refused.
 */
export const WRITE_WINDOW_BYTES = 8 * 1024 * 1024

/** Work on one handle runs one request at a time, in the order the requests came. */
class Serial {
  private tail: Promise<unknown> = Promise.resolve()
  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn, fn)
    this.tail = next.catch(() => undefined)
    return next
  }
}

/**
 * A file open for reading: one stream, reopened when a read jumps elsewhere, or after the
 * connection's bound on open read streams closed it (sftp-read-streams.ts).
 */
export class ReadHandle extends Serial implements ParkableRead {
  readonly kind = 'read'
  private stream: Readable | null = null
  private position = 0
  private ended = false
  private reading = false

  constructor(
    readonly file: ReadableFile,
    private readonly streams: ReadStreams,
  ) {
    super()
  }

  get busy(): boolean {
    return this.reading
  }

  /** Up to `length` bytes at `offset`; null at the end of the file. */
  read(offset: number, length: number): Promise<Buffer | null> {
    return this.run(async () => {
      if (offset >= this.file.entry.size) return null
      this.reading = true
      try {
        if (!this.stream || offset !== this.position) {
          this.stream?.destroy()
          this.stream = await this.file.read({ start: offset, chunkBytes: PROTOCOL_READ_BYTES })
          this.position = offset
          this.ended = false
        }
        this.streams.use(this)
        const chunk = await take(
          this.stream,
          length,
          () => this.ended,
          () => {
            this.ended = true
          },
        )
        if (chunk) this.position += chunk.length
        return chunk
      } finally {
        this.reading = false
      }
    })
  }

  park(): void {
    this.stream?.destroy()
    this.stream = null
  }

  close(): void {
    this.park()
    this.streams.closed(this)
  }
}

/** Reads exactly `length` bytes from a paused stream, fewer at its end, null if none are left. */
function take(
  stream: Readable,
  length: number,
  ended: () => boolean,
  end: () => void,
): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const chunk = stream.read(length) as Buffer | null
      if (chunk !== null) return finish(chunk)
      // At the end, read(n) hands back what is left only once; after that, nothing.
      if (ended() || stream.readableEnded) {
        const rest = stream.read() as Buffer | null
        return finish(rest)
      }
    }
    const finish = (v: Buffer | null) => {
      cleanup()
      resolve(v)
    }
    const onEnd = () => {
      end()
      attempt()
    }
    const onError = (err: Error) => {
      cleanup()
      reject(err)
    }
    const onClose = () => {
      if (!stream.readableEnded) onError(new Error('The file could not be read to its end'))
    }
    const cleanup = () => {
      stream.off('readable', attempt)
      stream.off('end', onEnd)
      stream.off('error', onError)
      stream.off('close', onClose)
    }
    stream.on('readable', attempt)
    stream.on('end', onEnd)
    stream.on('error', onError)
    stream.on('close', onClose)
    attempt()
  })
}

/** A file being written: bytes in offset order into the facade's writer, published on close. */
export class WriteHandle extends Serial {
  readonly kind = 'write'
  private readonly ahead = new Map<number, Buffer>()
  private aheadBytes = 0
  private failed = false

  constructor(
    readonly writer: FileWriter,
    /** The connection's count of WRITE bytes held in memory (sftp-write-budget.ts). */
    private readonly budget: WriteBudget,
  ) {
    super()
  }

  write(offset: number, data: Buffer): Promise<void> {
    // Counted on arrival: a write waiting for the one before it holds its bytes too. A refused
    // write fails the file in its turn, after the writes that came before it.
    if (!this.budget.take(data.length)) {
      return this.run(async () => {
        this.fail()
        throw ERRORS.tooManyConcurrentRequests(
          'Too much data waiting to be written on this connection or by this user: wait for the replies to earlier writes before sending more',
        )
      })
    }
    let held = false
    return this.run(async () => {
      try {
        if (this.failed) throw ERRORS.invalidUploadOffset('An earlier write to this file failed')
        const at = this.writer.written
        if (
          offset < at ||
          this.ahead.has(offset) ||
          (offset > at && this.aheadBytes + data.length > WRITE_WINDOW_BYTES)
        ) {
          this.fail()
          throw ERRORS.invalidUploadOffset(
            'Wharf stores files written front to back: this write is out of order (resuming or rewriting a file is not supported)',
          )
        }
        if (offset > at) {
          this.ahead.set(offset, data)
          this.aheadBytes += data.length
          held = true
          return
        }
        await this.writer.write(data)
        for (
          let next = this.ahead.get(this.writer.written);
          next;
          next = this.ahead.get(this.writer.written)
        ) {
          this.ahead.delete(this.writer.written)
          this.aheadBytes -= next.length
          try {
            await this.writer.write(next)
          } finally {
            this.budget.give(next.length)
          }
        }
      } catch (err) {
        this.fail()
        throw err
      } finally {
        if (!held) this.budget.give(data.length)
      }
    })
  }

  /** The client closed the file: publish it, unless a write failed or a gap is left. */
  commit(): Promise<FsEntry> {
    return this.run(async () => {
      if (this.failed || this.ahead.size > 0) {
        this.fail()
        await this.writer.abort()
        throw ERRORS.invalidUploadPartGap('The file was not stored: part of it never arrived')
      }
      return this.writer.commit()
    })
  }

  abort(): Promise<void> {
    this.fail()
    return this.writer.abort()
  }

  /** No later write is taken, and the bytes held ahead of a gap are let go at once. */
  private fail(): void {
    this.failed = true
    this.budget.give(this.aheadBytes)
    this.ahead.clear()
    this.aheadBytes = 0
  }
}

/** A folder being listed: entries handed out in batches. */
export class DirHandle extends Serial {
  readonly kind = 'dir'
  constructor(
    readonly entries: AsyncGenerator<FsEntry>,
    private first: IteratorResult<FsEntry> | null,
  ) {
    super()
  }

  /** Up to `max` entries; an empty array once all were given. */
  next(max: number): Promise<FsEntry[]> {
    return this.run(async () => {
      const out: FsEntry[] = []
      while (out.length < max) {
        const r = this.first ?? (await this.entries.next())
        this.first = null
        if (r.done) break
        out.push(r.value)
      }
      return out
    })
  }

  close(): void {
    void this.entries.return(undefined)
  }
}

export type Handle = ReadHandle | WriteHandle | DirHandle
