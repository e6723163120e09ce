import { PassThrough } from 'node:stream'
import { ERRORS } from '../../../api/error-factories.js'
import { ApiError } from '../../../api/errors.js'
import type { Principal } from '../../../identity/principal.js'
import type { UploadRow } from '../upload-parts.js'
import type { UploadService } from '../upload-service.js'
import { entryOfRow, type FsEntry } from './fs-entry.js'

/**
 * Bytes per upload part. A protocol client sends one stream of unknown length; it is cut into
 * parts of this size (Files.com allows 5 GiB per part and 10,000 parts), each streamed into
 * the blob store as it arrives, so nothing is ever held in memory beyond a stream buffer.
 */
export const WRITER_PART_BYTES = 1024 ** 3

/** A file being written by a protocol client: invisible until `commit`, nothing after `abort`. */
export interface FileWriter {
  /** The path the file will have. */
  readonly path: string
  /** Bytes accepted so far. */
  readonly written: number
  /** Appends bytes; resolves once they are accepted (the store keeps up: back-pressure). */
  write(chunk: Buffer): Promise<void>
  /** The client's own modification time (epoch ms) the file gets when it is committed. */
  setModifiedTime(mtimeMs: number): void
  /**
   * The client closed the file: publishes it in one transaction (file row, Action with the
   * interface, Upload webhook with the protocol), as the REST upload's `end` does.
   */
  commit(): Promise<FsEntry>
  /**
   * The client went away: the upload is discarded at once, its record and every staged byte,
   * so nothing is left for the janitor.
   */
  abort(): Promise<void>
}

/** How a writer cuts and keeps its upload. */
export interface WriterOptions {
  /** Bytes per upload part (WRITER_PART_BYTES; tests make it small to cross part boundaries). */
  partBytes?: number | undefined
  /**
   * The upload's lifetime without activity, in seconds (PROTOCOL_UPLOAD_EXPIRY_SECONDS); the
   * writer renews it four times as often while it is open, so only a writer whose process is
   * gone lets it expire.
   */
  expirySeconds: number
}

/**
 * A protocol upload on the same core as a REST upload (UploadService): `open` opens an upload,
 * the bytes go to its parts through `parts.store` (the call the signed `PUT upload_uri` makes
 * once it has checked its link; no URL is made or signed here), and `finish` assembles and
 * publishes. The rules (paths, permissions, parents, overwrite of a file, never of a folder)
 * hold because they are the same code.
 */
export class UploadWriter implements FileWriter {
  written = 0
  private part: { number: number; stream: PassThrough; done: Promise<void>; bytes: number } | null = null
  private partsSent = 0
  private failure: unknown = null
  private finished = false
  private readonly partBytes: number
  private readonly heartbeat: NodeJS.Timeout
  private beating = false
  private providedMtime: number | undefined

  constructor(
    private readonly uploads: UploadService,
    private readonly principal: Principal,
    readonly path: string,
    private readonly upload: UploadRow,
    opts: WriterOptions,
  ) {
    this.partBytes = opts.partBytes ?? WRITER_PART_BYTES
    // A part of a gigabyte may take minutes to arrive, and the end longer: the upload is kept
    // alive by the writer being open, not by the client's pace.
    this.heartbeat = setInterval(() => void this.keepAlive(), (opts.expirySeconds * 1000) / 4)
    this.heartbeat.unref()
  }

  async write(chunk: Buffer): Promise<void> {
    this.checkOpen()
    let rest = chunk
    while (rest.length > 0) {
      // Aborted while this write waited (the client's connection dropped): no new part.
      if (this.failure) throw this.failure
      const part = this.part ?? (await this.nextPart())
      const room = this.partBytes - part.bytes
      const piece = rest.length > room ? rest.subarray(0, room) : rest
      rest = rest.subarray(piece.length)
      part.bytes += piece.length
      this.written += piece.length
      if (!part.stream.write(piece)) await drained(part.stream)
      if (this.failure) throw this.failure
      if (part.bytes >= this.partBytes) await this.closePart()
    }
  }

  setModifiedTime(mtimeMs: number): void {
    this.providedMtime = mtimeMs
  }

  async commit(): Promise<FsEntry> {
    if (this.finished) throw ERRORS.fileUploadNotFound('This upload is already finished')
    this.finished = true
    try {
      // A write that failed (or an upload found expired) publishes nothing, and is discarded.
      if (this.failure) throw this.failure
      await this.closePart()
      const row = await this.uploads.finish(this.principal, this.path, this.upload.ref, {
        providedMtime: this.providedMtime,
      })
      return entryOfRow(row)
    } catch (err) {
      await this.discard()
      throw err
    } finally {
      clearInterval(this.heartbeat)
    }
  }

  async abort(): Promise<void> {
    if (this.finished) return
    this.finished = true
    this.failure ??= ERRORS.invalidBody('The upload was abandoned')
    await this.discard()
  }

  private checkOpen(): void {
    if (this.failure) throw this.failure
    if (this.finished) throw ERRORS.fileUploadNotFound('This upload is already finished')
  }

  /** Stops the part in flight, then discards the upload (a failure leaves it to expire). */
  private async discard(): Promise<void> {
    clearInterval(this.heartbeat)
    const part = this.part
    this.part = null
    if (part) {
      part.stream.destroy()
      await part.done.catch(() => undefined)
    }
    await this.uploads.abandon(this.principal, this.path, this.upload.ref).catch(() => undefined)
  }

  /** Also while `commit` assembles the parts, which for a large file takes a while. */
  private async keepAlive(): Promise<void> {
    if (this.beating) return
    this.beating = true
    try {
      await this.uploads.keepAlive(this.principal, this.path, this.upload.ref)
    } catch (err) {
      // Expired after all (a process stalled past its lifetime): the next write says so, rather
      // than the client sending the rest for nothing. Another failure is retried on the next beat.
      if (err instanceof ApiError && err.type === 'not-found/file-upload-not-found' && !this.finished) {
        this.failure ??= err
        clearInterval(this.heartbeat)
      }
    } finally {
      this.beating = false
    }
  }

  /** Starts the next part: its bytes flow into the blob store while the client sends them. */
  private async nextPart() {
    const number = this.partsSent + 1
    // From here to `this.part` nothing waits, so an abort either comes first (and is seen here)
    // or finds the part and stops it: no part is ever left streaming into the store.
    if (this.failure) throw this.failure
    const stream = new PassThrough({ highWaterMark: 256 * 1024 })
    // Its failures reach `done`; the store may not be reading it yet when it is destroyed.
    stream.on('error', () => undefined)
    const done = this.uploads.parts.store(this.upload, number, stream)
    // Remembered, so that a write waiting for room stops at once rather than waiting forever.
    done.catch((err: unknown) => {
      this.failure ??= err
      stream.destroy()
    })
    this.partsSent = number
    this.part = { number, stream, done, bytes: 0 }
    return this.part
  }

  private async closePart(): Promise<void> {
    const part = this.part
    if (!part) return
    this.part = null
    part.stream.end()
    await part.done
  }
}

/** Room in the stream again, or the stream is gone (its consumer failed). */
function drained(stream: PassThrough): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off('drain', done)
      stream.off('close', done)
      resolve()
    }
    stream.on('drain', done)
    stream.on('close', done)
  })
}
