import crypto from 'node:crypto'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import {
  type BlobChecksums,
  type BlobInfo,
  BlobNotFoundError,
  type BlobStore,
  type ByteRange,
  type ReadOptions,
  StagedPartError,
  type StoredBlob,
} from '../blob-store.js'
import { Digest } from '../digest.js'
import { Counter } from './byte-counter.js'
import { flushAll, linkOrCopy, mkdirDurable, newestWrite, syncDir } from './durable-files.js'
import { hashFiles } from './hash-files.js'
import { checkRange, READ_CHUNK_BYTES, readSegments } from './segments.js'
import { Writeback } from './writeback.js'

const REF = /^[A-Za-z0-9_-]{1,64}$/
const KEY = /^[0-9a-f]{32}$/
const MAX_PART = 10_000
/** The sizes file of an assembled (folder) blob. */
const SIZES = 'sizes'

/**
 * Blobs as files under one folder:
 * - `blobs/ab/cd/<key>`: published blobs (key: 32 random hex characters), never modified. A blob
 *   is one file, or, when assembled from an upload's parts, a folder holding the parts (`1`…`n`)
 *   and their sizes (`sizes`, JSON), read one after another: assembling then writes no byte twice.
 *   Parts and copies are hard links where the file system allows (blobs are never written in
 *   place, so sharing an inode is safe; deleting one name keeps the other);
 * - `parts/<ref>/<n>`: staged parts of uploads in progress;
 * - `tmp/`: files being written. Every write goes to tmp, is flushed to disk, and is renamed into
 *   place (and the folder holding it flushed too), so a reader or a crash never sees half a blob
 *   and a blob reported as stored survives a power cut.
 */
export class LocalBlobStore implements BlobStore {
  private readonly blobs: string
  private readonly parts: string
  private readonly tmp: string
  private ready: Promise<void> | null = null
  private readonly writeback = new Writeback()

  constructor(readonly root: string) {
    this.blobs = path.join(root, 'blobs')
    this.parts = path.join(root, 'parts')
    this.tmp = path.join(root, 'tmp')
  }

  private init(): Promise<void> {
    this.ready ??= Promise.all([this.blobs, this.parts, this.tmp].map(mkdirDurable)).then(
      () => undefined,
      (err: unknown) => {
        // Not cached: a folder that could not be made now (a full disk, say) may be made later.
        this.ready = null
        throw err
      },
    )
    return this.ready
  }

  private blobPath(key: string): string {
    if (!KEY.test(key)) throw new BlobNotFoundError(key)
    return path.join(this.blobs, key.slice(0, 2), key.slice(2, 4), key)
  }

  /** Where a blob about to be written under a key the caller chose will be; an Error for a bad key. */
  private newBlobPath(key: string): string {
    if (!KEY.test(key)) throw new Error(`Invalid blob key ${JSON.stringify(key)}`)
    return this.blobPath(key)
  }

  private partDir(ref: string): string {
    if (!REF.test(ref)) throw new Error(`Invalid upload ref ${JSON.stringify(ref)}`)
    return path.join(this.parts, ref)
  }

  private tmpPath(): string {
    return path.join(this.tmp, `${Date.now()}-${crypto.randomBytes(8).toString('hex')}`)
  }

  /** Writes a stream to a temporary file, flushed to disk; the caller renames it into place. */
  private async writeTemp(source: Readable, digest: Digest | Counter, flush = true): Promise<string> {
    await this.init()
    const tmp = this.tmpPath()
    try {
      // `flush` fsyncs before the close; pipeline settles only once the file is closed, so the
      // rm below never races the stream (a failed input leaves no temporary file behind).
      // 1 MiB of buffer, not 16 KiB: what arrives while a file write is in flight goes in the
      // next one (writev), rather than one write (and one round trip through libuv's threads)
      // per small piece: an SFTP upload comes in 32 KiB requests.
      const out = fs.createWriteStream(tmp, { flags: 'wx', flush, highWaterMark: 1024 * 1024 })
      if (digest instanceof Digest) await pipeline(source, digest, out)
      else {
        // Counting needs no transform stage between the socket and the file: a listener will do.
        source.on('data', (chunk: Buffer) => digest.add(source, chunk))
        await pipeline(source, out)
      }
      return tmp
    } catch (err) {
      await fsp.rm(tmp, { force: true })
      throw err
    }
  }

  /** Renames a finished temporary file to `dest`, durably; the temporary file never outlives a failure. */
  private async moveIntoPlace(tmp: string, dest: string): Promise<void> {
    try {
      await mkdirDurable(path.dirname(dest))
      await fsp.rename(tmp, dest)
    } catch (err) {
      await fsp.rm(tmp, { force: true })
      throw err
    }
    await syncDir(path.dirname(dest))
  }

  newKey(): string {
    return crypto.randomBytes(16).toString('hex')
  }

  /** Renames a finished temporary file or folder into place as the blob `key` (or a fresh one). */
  private async publish(tmp: string, key = this.newKey()): Promise<string> {
    await this.moveIntoPlace(tmp, this.newBlobPath(key))
    return key
  }

  /** A caller's key is checked before the bytes are written: publish would refuse it only after. */
  private checkNewKey(key: string | undefined): void {
    if (key !== undefined) this.newBlobPath(key)
  }

  async put(data: Readable, opts: { maxBytes?: number; key?: string } = {}): Promise<BlobInfo> {
    this.checkNewKey(opts.key)
    const digest = new Digest(opts.maxBytes)
    const key = await this.publish(await this.writeTemp(data, digest), opts.key)
    return digest.result(key)
  }

  async putSegments(
    count: number,
    write: (files: string[]) => Promise<void>,
    opts: { key?: string } = {},
  ): Promise<StoredBlob> {
    this.checkNewKey(opts.key)
    await this.init()
    const tmp = this.tmpPath()
    try {
      await fsp.mkdir(tmp)
      // Laid out as an assembled upload: numbered segments and their sizes, read back as one.
      const files = Array.from({ length: count }, (_, i) => path.join(tmp, String(i + 1)))
      await write(files)
      await flushAll(files)
      const sizes = await Promise.all(files.map(async (f) => (await fsp.stat(f)).size))
      await fsp.writeFile(path.join(tmp, SIZES), JSON.stringify(sizes), { flush: true })
      await syncDir(tmp)
      const key = await this.publish(tmp, opts.key)
      return { key, size: sizes.reduce((a, b) => a + b, 0) }
    } catch (err) {
      await fsp.rm(tmp, { recursive: true, force: true })
      throw err
    }
  }

  async putUnhashed(data: Readable, opts: { key?: string } = {}): Promise<StoredBlob> {
    this.checkNewKey(opts.key)
    const counter = new Counter()
    const key = await this.publish(await this.writeTemp(data, counter), opts.key)
    return { key, size: counter.size }
  }

  async putPart(ref: string, partNumber: number, data: Readable, opts: { maxBytes?: number } = {}) {
    const file = path.join(this.partDir(ref), partName(partNumber))
    const digest = new Counter(opts.maxBytes)
    // Each writer has its own temporary file and rename replaces atomically: when the same part
    // arrives twice at once, the last one to finish wins whole. No flush here (assemble flushes):
    // a flush per part made every part wait for the disk and cut upload throughput by a third.
    // Writeback only starts one in the background, which nobody waits for.
    const tmp = await this.writeTemp(data, digest, false)
    try {
      await mkdirDurable(path.dirname(file))
      await fsp.rename(tmp, file)
    } catch (err) {
      await fsp.rm(tmp, { force: true })
      throw err
    }
    this.writeback.add(ref, file)
    return { size: digest.size }
  }

  async assemble(ref: string, partNumbers: number[], expected?: number[], key?: string): Promise<StoredBlob> {
    this.checkNewKey(key)
    const dir = this.partDir(ref)
    const names = partNumbers.map(partName)
    // Parts still waiting for their head start are flushed below anyway.
    this.writeback.forget(ref)
    await this.init()
    const tmp = this.tmpPath()
    try {
      await fsp.mkdir(tmp)
      // The parts become the blob's segments by link, not by copy: the upload's bytes were
      // written (and flushed) once, by putPart. The staged names stay until discardUpload.
      for (const [i, name] of names.entries()) {
        await linkOrCopy(path.join(dir, name), path.join(tmp, String(i + 1))).catch(
          (err: NodeJS.ErrnoException) => {
            if (err.code === 'ENOENT') throw new StagedPartError(ref, partNumbers[i]!, 'is not staged')
            throw err
          },
        )
      }
      // Parts were not flushed when they arrived: now, before the blob is published (by then the
      // kernel has written most of them back, so this is quick).
      await flushAll(
        names.map((_, i) => path.join(tmp, String(i + 1))),
        expected?.map((size, i) => ({ size, part: partNumbers[i]!, ref })),
      )
      // Sizes as the segments hold them now (checksums come later: `checksums`).
      const files = names.map((_, i) => path.join(tmp, String(i + 1)))
      const sizes = await Promise.all(files.map(async (f) => (await fsp.stat(f)).size))
      await fsp.writeFile(path.join(tmp, SIZES), JSON.stringify(sizes), { flush: true })
      await syncDir(tmp)
      return { key: await this.publish(tmp, key), size: sizes.reduce((a, b) => a + b, 0) }
    } catch (err) {
      await fsp.rm(tmp, { recursive: true, force: true })
      throw err
    }
  }

  async checksums(
    key: string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<BlobChecksums & { size: number }> {
    const file = this.blobPath(key)
    const sizes = await this.segments(key)
    const files = sizes ? sizes.map((_, i) => path.join(file, String(i + 1))) : [file]
    const digest = new Digest()
    try {
      await hashFiles(digest, files, opts.signal)
    } catch (err) {
      if (['ENOENT', 'EISDIR'].includes((err as NodeJS.ErrnoException).code ?? '')) {
        throw new BlobNotFoundError(key)
      }
      throw err
    }
    const { md5, crc32, sha256, size } = digest.result(key)
    return { md5, crc32, sha256, size }
  }

  async discardUpload(ref: string): Promise<void> {
    this.writeback.forget(ref)
    await fsp.rm(this.partDir(ref), { recursive: true, force: true })
  }

  async *stagedUploads(): AsyncIterable<{ ref: string; modifiedAt: number }> {
    await this.init()
    const dir = await fsp.opendir(this.parts)
    for await (const entry of dir) {
      if (!entry.isDirectory() || !REF.test(entry.name)) continue
      // The folder's mtime moves whenever a part is renamed into it.
      const st = await fsp.stat(path.join(this.parts, entry.name)).catch(() => null)
      if (st) yield { ref: entry.name, modifiedAt: st.mtimeMs }
    }
  }

  async open(key: string, range?: ByteRange, opts: ReadOptions = {}): Promise<Readable> {
    const file = this.blobPath(key)
    if (range) checkRange(range)
    const chunkBytes = opts.chunkBytes ?? READ_CHUNK_BYTES
    if (!Number.isSafeInteger(chunkBytes) || chunkBytes < 1)
      throw new RangeError(`Invalid chunk size ${chunkBytes}`)
    const sizes = await this.segments(key)
    if (sizes) return readSegments(file, sizes, range, chunkBytes)
    // Open first, so a missing blob is an error here and not in the middle of a response.
    const handle = await fsp.open(file, 'r').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'EISDIR') throw new BlobNotFoundError(key)
      throw err
    })
    // The stream owns the handle from here: it closes it on end, error or destroy.
    return handle.createReadStream({
      ...(range ? { start: range.start, end: range.end } : {}),
      highWaterMark: chunkBytes,
    })
  }

  /** The segment sizes of an assembled blob, or null for a one-file blob (or a missing one). */
  private async segments(key: string): Promise<number[] | null> {
    try {
      return JSON.parse(await fsp.readFile(path.join(this.blobPath(key), SIZES), 'utf8')) as number[]
    } catch (err) {
      if (['ENOENT', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '')) return null
      throw err
    }
  }

  async size(key: string): Promise<number | null> {
    try {
      const sizes = await this.segments(key)
      if (sizes) return sizes.reduce((a, b) => a + b, 0)
      return (await fsp.stat(this.blobPath(key))).size
    } catch (err) {
      if (err instanceof BlobNotFoundError || (err as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw err
    }
  }

  async copy(key: string, dest?: string): Promise<string> {
    const source = this.blobPath(key)
    this.checkNewKey(dest)
    await this.init()
    const tmp = this.tmpPath()
    try {
      const sizes = await this.segments(key)
      if (sizes) {
        await fsp.mkdir(tmp)
        for (const name of [...sizes.map((_, i) => String(i + 1)), SIZES]) {
          await linkOrCopy(path.join(source, name), path.join(tmp, name))
        }
        await syncDir(tmp)
      } else {
        await linkOrCopy(source, tmp)
      }
    } catch (err) {
      await fsp.rm(tmp, { recursive: true, force: true })
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BlobNotFoundError(key)
      throw err
    }
    return this.publish(tmp, dest)
  }

  async delete(key: string): Promise<void> {
    if (!KEY.test(key)) return
    await fsp.rm(this.blobPath(key), { recursive: true, force: true })
  }

  async *keys(): AsyncIterable<string> {
    // blobs/ab/cd/<key>: only names that are keys and lie where their key says count.
    const names = async (dir: string) => {
      try {
        return await fsp.readdir(dir)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
        throw err
      }
    }
    for (const a of (await names(this.blobs)).sort()) {
      if (!/^[0-9a-f]{2}$/.test(a)) continue
      for (const b of (await names(path.join(this.blobs, a))).sort()) {
        if (!/^[0-9a-f]{2}$/.test(b)) continue
        for (const key of await names(path.join(this.blobs, a, b))) {
          if (KEY.test(key) && key.startsWith(a + b)) yield key
        }
      }
    }
  }

  async sweepTemporary(olderThanMs: number): Promise<number> {
    await this.init()
    // File times are wall-clock times, so this compares against the wall clock.
    const cutoff = Date.now() - olderThanMs
    let removed = 0
    for (const name of await fsp.readdir(this.tmp)) {
      const file = path.join(this.tmp, name)
      // A file still being written has a fresh mtime: every write moves it. A folder (a blob
      // being assembled or written as segments) is as fresh as the newest file in it.
      const st = await fsp.stat(file).catch(() => null)
      if (st && (await newestWrite(file, st)) < cutoff) {
        await fsp.rm(file, { recursive: true, force: true })
        removed++
      }
    }
    return removed
  }
}

/** The file name of a part; refuses anything but 1…10000, so no number can name another file. */
function partName(n: number): string {
  if (!Number.isInteger(n) || n < 1 || n > MAX_PART) throw new Error(`Invalid part number ${n}`)
  return String(n)
}
