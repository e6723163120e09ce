import crypto from 'node:crypto'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { Readable, Transform, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import zlib from 'node:zlib'
import {
  type BlobInfo,
  BlobNotFoundError,
  type BlobStore,
  BlobTooLargeError,
  type ByteRange,
} from './blob-store.js'

const REF = /^[A-Za-z0-9_-]{1,64}$/
const KEY = /^[0-9a-f]{32}$/

/** Counts bytes, computes md5 and CRC-32 on the way through, and stops past a size limit. */
class Digest extends Transform {
  size = 0
  private readonly md5 = crypto.createHash('md5')
  private crc = 0
  constructor(
    private readonly maxBytes = Number.POSITIVE_INFINITY,
    private readonly checksums = true,
  ) {
    super()
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.size += chunk.length
    if (this.size > this.maxBytes) {
      done(new BlobTooLargeError(this.maxBytes))
      return
    }
    if (this.checksums) {
      this.md5.update(chunk)
      this.crc = zlib.crc32(chunk, this.crc)
    }
    done(null, chunk)
  }
  result(key: string): BlobInfo {
    return {
      key,
      size: this.size,
      md5: this.md5.digest('hex'),
      crc32: this.crc.toString(16).padStart(8, '0'),
    }
  }
}

/**
 * Blobs as files under one folder:
 * - `blobs/ab/cd/<key>`: published blobs (key: 32 random hex characters), never modified;
 * - `parts/<ref>/<n>`: staged parts of uploads in progress;
 * - `tmp/`: files being written. Every write goes to tmp, is flushed to disk, and is renamed into
 *   place, so a reader or a crash never sees half a blob.
 */
export class LocalBlobStore implements BlobStore {
  private readonly blobs: string
  private readonly parts: string
  private readonly tmp: string
  private ready: Promise<void> | null = null

  constructor(readonly root: string) {
    this.blobs = path.join(root, 'blobs')
    this.parts = path.join(root, 'parts')
    this.tmp = path.join(root, 'tmp')
  }

  private init(): Promise<void> {
    this.ready ??= Promise.all(
      [this.blobs, this.parts, this.tmp].map((d) => fsp.mkdir(d, { recursive: true })),
    ).then(() => undefined)
    return this.ready
  }

  private blobPath(key: string): string {
    if (!KEY.test(key)) throw new BlobNotFoundError(key)
    return path.join(this.blobs, key.slice(0, 2), key.slice(2, 4), key)
  }

  private partDir(ref: string): string {
    if (!REF.test(ref)) throw new Error(`Invalid upload ref ${JSON.stringify(ref)}`)
    return path.join(this.parts, ref)
  }

  private tmpPath(): string {
    return path.join(this.tmp, `${Date.now()}-${crypto.randomBytes(8).toString('hex')}`)
  }

  /** Writes a stream to a temporary file and flushes it; the caller renames it into place. */
  private async writeTemp(source: Readable | Readable[], digest: Digest): Promise<string> {
    await this.init()
    const tmp = this.tmpPath()
    try {
      const out = fs.createWriteStream(tmp, { flags: 'wx' })
      if (Array.isArray(source)) {
        // Parts one after another into one file, without ending the file between them.
        for (const s of source) await pipeline(s, digest, out, { end: false })
        await new Promise<void>((resolve, reject) => {
          out.end((err?: Error | null) => (err ? reject(err) : resolve()))
        })
      } else {
        await pipeline(source, digest, out)
      }
      const fd = await fsp.open(tmp, 'r+')
      try {
        await fd.sync()
      } finally {
        await fd.close()
      }
      return tmp
    } catch (err) {
      await fsp.rm(tmp, { force: true })
      throw err
    }
  }

  private async publish(tmp: string, key: string): Promise<void> {
    const dest = this.blobPath(key)
    await fsp.mkdir(path.dirname(dest), { recursive: true })
    await fsp.rename(tmp, dest)
  }

  async put(data: Readable, opts: { maxBytes?: number } = {}): Promise<BlobInfo> {
    const digest = new Digest(opts.maxBytes)
    const tmp = await this.writeTemp(data, digest)
    const key = crypto.randomBytes(16).toString('hex')
    await this.publish(tmp, key)
    return digest.result(key)
  }

  async putPart(ref: string, partNumber: number, data: Readable, opts: { maxBytes?: number } = {}) {
    const dir = this.partDir(ref)
    if (!Number.isInteger(partNumber) || partNumber < 1) throw new Error(`Invalid part number ${partNumber}`)
    const digest = new Digest(opts.maxBytes, false)
    const tmp = await this.writeTemp(data, digest)
    try {
      await fsp.mkdir(dir, { recursive: true })
      await fsp.rename(tmp, path.join(dir, String(partNumber)))
    } catch (err) {
      await fsp.rm(tmp, { force: true })
      throw err
    }
    return { size: digest.size }
  }

  async assemble(ref: string, partNumbers: number[]): Promise<BlobInfo> {
    const dir = this.partDir(ref)
    const digest = new Digest()
    // Opened lazily, one at a time, so that a thousand parts do not hold a thousand descriptors.
    async function* concat() {
      for (const n of partNumbers) {
        const stream = fs.createReadStream(path.join(dir, String(n)))
        for await (const chunk of stream) yield chunk as Buffer
      }
    }
    const tmp = await this.writeTemp(Readable.from(concat(), { objectMode: false }), digest)
    const key = crypto.randomBytes(16).toString('hex')
    await this.publish(tmp, key)
    return digest.result(key)
  }

  async discardUpload(ref: string): Promise<void> {
    await fsp.rm(this.partDir(ref), { recursive: true, force: true })
  }

  async *stagedUploads(): AsyncIterable<{ ref: string; modifiedAt: number }> {
    await this.init()
    const dir = await fsp.opendir(this.parts)
    for await (const entry of dir) {
      if (!entry.isDirectory() || !REF.test(entry.name)) continue
      const st = await fsp.stat(path.join(this.parts, entry.name)).catch(() => null)
      if (st) yield { ref: entry.name, modifiedAt: st.mtimeMs }
    }
  }

  async open(key: string, range?: ByteRange): Promise<Readable> {
    const file = this.blobPath(key)
    // Open first, so a missing blob is an error here and not in the middle of a response.
    const handle = await fsp.open(file, 'r').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') throw new BlobNotFoundError(key)
      throw err
    })
    return handle.createReadStream({
      ...(range ? { start: range.start, end: range.end } : {}),
      highWaterMark: 256 * 1024,
    })
  }

  async size(key: string): Promise<number | null> {
    try {
      return (await fsp.stat(this.blobPath(key))).size
    } catch (err) {
      if (err instanceof BlobNotFoundError || (err as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw err
    }
  }

  async copy(key: string): Promise<string> {
    await this.init()
    const tmp = this.tmpPath()
    try {
      // A reflink where the file system offers one (copy-on-write), a plain copy elsewhere.
      await fsp.copyFile(this.blobPath(key), tmp, fs.constants.COPYFILE_FICLONE)
    } catch (err) {
      await fsp.rm(tmp, { force: true })
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BlobNotFoundError(key)
      throw err
    }
    const copy = crypto.randomBytes(16).toString('hex')
    await this.publish(tmp, copy)
    return copy
  }

  async delete(key: string): Promise<void> {
    if (!KEY.test(key)) return
    await fsp.rm(this.blobPath(key), { force: true })
  }

  async sweepTemporary(olderThanMs: number): Promise<number> {
    await this.init()
    const cutoff = Date.now() - olderThanMs
    let removed = 0
    for (const name of await fsp.readdir(this.tmp)) {
      const file = path.join(this.tmp, name)
      const st = await fsp.stat(file).catch(() => null)
      if (st && st.mtimeMs < cutoff) {
        await fsp.rm(file, { force: true })
        removed++
      }
    }
    return removed
  }
}
