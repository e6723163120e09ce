import crypto from 'node:crypto'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { addAbortSignal, pipeline as pipe, Readable, type Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  type GetObjectCommandOutput,
  HeadObjectCommand,
  UploadPartCommand,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3'
import {
  type AssemblyPlan,
  type BlobChecksums,
  type BlobInfo,
  BlobNotFoundError,
  type BlobStore,
  type ByteRange,
  type Exclusive,
  StagedPartError,
  type StoredBlob,
} from '../blob-store.js'
import { Digest } from '../digest.js'
import { CountedRead } from '../read-buffers.js'
import { sweepFolder } from './local-temporary.js'
import { copyable, readParts, type StagedPart, stagedParts } from './s3-assemble.js'
import { abortStaleUploads, copyPieces, copySource } from './s3-multipart.js'
import {
  asStorageFull,
  deleteKeys,
  isNotFound,
  isNotImplemented,
  isPreconditionFailed,
  listObjects,
  MAX_PART_BYTES,
  Measure,
  MIN_PART_BYTES,
  newKey,
  type Place,
} from './s3-objects.js'
import { checkRange, exactRange } from './s3-ranges.js'
import { uploadStream } from './s3-stream-upload.js'
import {
  completionError,
  isNoSuchUpload,
  type ListedParts,
  parseMarker,
  type UploadTarget,
  UploadTargets,
  uploadGone,
} from './s3-upload-targets.js'

export { newKey }

const REF = /^[A-Za-z0-9_-]{1,64}$/
const KEY = /^[0-9a-f]{32}$/
const MAX_PART = 10_000
/** S3's most parts in one multipart upload. */
const MAX_UPLOAD_PARTS = 10_000
/** Size of each part when one object larger than CopyObject allows is copied in parts. */
const COPY_PART_BYTES = 1024 ** 3
/** Staged parts added to an upload's multipart upload at once when it is completed. */
const ADDS_AT_ONCE = 4

/** What planAssembly found of an upload, which assemble uses instead of looking again. */
interface Planned {
  ref: string
  /** The upload's multipart upload, if one was opened (a part streamed into it, or a presigned URL). */
  target: UploadTarget | null
  /** The parts in it. */
  listed: ListedParts
  /** The upload's staged objects, by part name. */
  staged: Map<string, { size: number; etag: string }>
}

export interface S3BlobStoreOptions extends Place {
  /** A local folder for files written before they are sent (putSegments), under DATA_DIR. */
  tmpDir: string
}

/**
 * Blobs as objects in an S3-compatible bucket, under the store's prefix:
 * - `blobs/<key>`: published blobs (key: 32 random hex characters), never modified;
 * - `parts/<ref>/<n>`: staged parts of uploads in progress, each its own object, so a part may
 *   have any size (S3's own multipart parts must be 5 MiB but the last) and may be sent again;
 * - `parts/<ref>/direct/<key>/<uploadId>`: the marker of the upload's S3 multipart upload, aimed
 *   at `blobs/<key>`, once a part went into it (s3-upload-targets.ts).
 *
 * A part whose length is known before its first byte (the request's Content-Length), 5 MiB to
 * 5 GiB, streams straight into the upload's multipart upload as one UploadPart: no buffer, and
 * ending the upload is one CompleteMultipartUpload, with no byte read back. Other parts are
 * staged; at the end they are added to the multipart upload (UploadPartCopy, or streamed where the
 * server has none), or, where no part went into one, assembled into a new object as before.
 *
 * Every write is a PutObject or a multipart upload, which S3 makes visible whole or not at all:
 * no temporary object is ever visible. All bytes pass through Wharf (proxy mode).
 * A failed write aborts its multipart upload; one a crash left is aborted by sweepTemporary.
 */
export class S3BlobStore implements BlobStore {
  protected readonly place: Place
  private readonly tmpDir: string
  /** Cleared the first time the server says it has no UploadPartCopy: assemble then streams. */
  private partCopy = true
  /** The multipart upload of each Wharf upload that has one. */
  protected readonly targets: UploadTargets
  /** Each plan this store handed out, with what it found (gone with the plan). */
  private readonly plans = new WeakMap<AssemblyPlan, Planned>()

  constructor(opts: S3BlobStoreOptions) {
    this.place = { client: opts.client, bucket: opts.bucket, prefix: opts.prefix }
    this.tmpDir = opts.tmpDir
    this.targets = new UploadTargets(
      this.place,
      (key) => this.objectKey(key),
      (ref) => `${this.partPrefix(ref)}direct/`,
    )
  }

  protected objectKey(key: string): string {
    if (!KEY.test(key)) throw new BlobNotFoundError(key)
    return `${this.place.prefix}blobs/${key}`
  }

  /** The object a blob about to be written under a key the caller chose will be; an Error for a bad key. */
  protected newObjectKey(key: string): string {
    if (!KEY.test(key)) throw new Error(`Invalid blob key ${JSON.stringify(key)}`)
    return this.objectKey(key)
  }

  protected partPrefix(ref: string): string {
    if (!REF.test(ref)) throw new Error(`Invalid upload ref ${JSON.stringify(ref)}`)
    return `${this.place.prefix}parts/${ref}/`
  }

  /**
   * Streams `source` through `through` into a new object. A failure anywhere destroys the source
   * (as the interface promises) and leaves no object (a multipart upload is aborted).
   */
  private async upload(
    objectKey: string,
    source: Readable,
    through: Transform,
    size?: number,
  ): Promise<void> {
    // Errors travel by destroying the streams: the upload sees them when it reads `through`.
    void pipeline(source, through).catch(() => undefined)
    try {
      await uploadStream(this.place, objectKey, through, partsFor(size))
    } catch (err) {
      source.destroy()
      through.destroy()
      throw asStorageFull(source.errored ?? through.errored ?? err)
    }
  }

  async put(data: Readable, opts: { maxBytes?: number; key?: string } = {}): Promise<BlobInfo> {
    const key = opts.key ?? newKey()
    const digest = new Digest(opts.maxBytes)
    await this.upload(this.newObjectKey(key), data, digest)
    return digest.result(key)
  }

  async putUnhashed(data: Readable, opts: { key?: string } = {}): Promise<StoredBlob> {
    const key = opts.key ?? newKey()
    const measure = new Measure()
    await this.upload(this.newObjectKey(key), data, measure)
    return { key, size: measure.size }
  }

  async putSegments(
    count: number,
    write: (files: string[]) => Promise<void>,
    opts: { key?: string } = {},
  ): Promise<StoredBlob> {
    const key = opts.key ?? newKey()
    const dest = this.newObjectKey(key)
    // The writers need files; the object is sent once they are all done, one after another.
    const dir = path.join(this.tmpDir, `${Date.now()}-${crypto.randomBytes(8).toString('hex')}`)
    await fsp.mkdir(dir, { recursive: true })
    try {
      const files = Array.from({ length: count }, (_, i) => path.join(dir, String(i + 1)))
      await write(files)
      async function* concatenation() {
        for (const file of files) {
          for await (const chunk of fs.createReadStream(file, { highWaterMark: 256 * 1024 }))
            yield chunk as Buffer
        }
      }
      let size = 0
      for (const file of files) size += (await fsp.stat(file)).size
      const measure = new Measure()
      await this.upload(dest, Readable.from(concatenation(), { objectMode: false }), measure, size)
      return { key, size: measure.size }
    } finally {
      await fsp.rm(dir, { recursive: true, force: true })
    }
  }

  async putPart(
    ref: string,
    partNumber: number,
    data: Readable,
    opts: { maxBytes?: number; length?: number; exclusive?: Exclusive } = {},
  ) {
    const staged = this.partPrefix(ref) + partName(partNumber)
    const { length } = opts
    if (
      length !== undefined &&
      length >= MIN_PART_BYTES &&
      length <= Math.min(MAX_PART_BYTES, opts.maxBytes ?? MAX_PART_BYTES)
    ) {
      return this.streamPart(ref, partNumber, data, length, staged, opts.exclusive)
    }
    const measure = new Measure(opts.maxBytes)
    // A PutObject (or a completed multipart upload) replaces the earlier copy whole, and only
    // once it is complete: a failed one leaves the earlier copy; of two at once, the last wins.
    await this.upload(staged, data, measure)
    return { size: measure.size }
  }

  /**
   * A part of known length into the upload's multipart upload, as one UploadPart whose body is the
   * part as it arrives: S3 keeps the part only once all its bytes came, and a part sent again
   * replaces it. A staged copy of the same part, which assembly would take for the newest, is
   * deleted once this one is in.
   */
  private async streamPart(
    ref: string,
    partNumber: number,
    data: Readable,
    length: number,
    staged: string,
    exclusive: Exclusive = (work) => work(),
  ): Promise<{ size: number }> {
    // Opened (or found) alone among the processes: two opening at once would make two multipart
    // uploads, and the end would see the parts of one.
    const target = await (this.targets.known(ref)
      ? this.targets.open(ref)
      : exclusive(() => this.targets.open(ref)))
    const measure = new Measure(length)
    // The SDK pipes the body into its request, which does not see the body fail: a failure of
    // the input aborts the request, so that S3 never waits for the bytes that will not come.
    const abort = new AbortController()
    pipe(data, measure, (err) => {
      if (err) abort.abort(err)
    })
    try {
      await this.place.client.send(
        new UploadPartCommand({
          ...this.targets.of(target),
          PartNumber: partNumber,
          Body: measure,
          ContentLength: length,
        }),
        { abortSignal: abort.signal },
      )
    } catch (err) {
      data.destroy()
      measure.destroy()
      const cause = data.errored ?? measure.errored ?? err
      if (isNoSuchUpload(cause)) {
        this.targets.forget(ref)
        throw uploadGone(ref, partNumber)
      }
      throw asStorageFull(cause)
    }
    await deleteKeys(this.place, [staged])
    return { size: measure.size }
  }

  newKey(): string {
    return newKey()
  }

  /**
   * One listing of the upload's staging folder (its staged parts, and the marker of its multipart
   * upload if it has one) and, with a multipart upload, one ListParts: `action=end` needs both the
   * key and the parts, and assemble, given the plan, asks S3 for neither again.
   */
  async planAssembly(ref: string): Promise<AssemblyPlan> {
    const planned = await this.look(ref)
    const plan: AssemblyPlan = {
      key: planned.target?.blobKey ?? null,
      directParts: [...planned.listed.entries()].map(([partNumber, p]) => ({ partNumber, size: p.size })),
    }
    this.plans.set(plan, planned)
    return plan
  }

  private async look(ref: string): Promise<Planned> {
    const { staged, target } = await this.staging(ref)
    if (target) this.targets.found(ref, target)
    const listed: ListedParts = target ? await this.targets.listParts(ref, target) : new Map()
    return { ref, target, listed, staged }
  }

  /**
   * One listing of an upload's staging folder: every object in it, the staged parts by name, and
   * the marker of its multipart upload, if one was opened (or the one this process opened,
   * should the listing not show its marker yet).
   */
  private async staging(ref: string): Promise<{
    keys: string[]
    staged: Map<string, { size: number; etag: string }>
    target: UploadTarget | null
  }> {
    const dir = this.partPrefix(ref)
    const keys: string[] = []
    const staged = new Map<string, { size: number; etag: string }>()
    let target: UploadTarget | null = null
    for await (const o of listObjects(this.place, dir)) {
      keys.push(o.key)
      const name = o.key.slice(dir.length)
      const marker = parseMarker(name.split('/'))
      if (marker) target ??= marker
      else if (!name.includes('/')) staged.set(name, o)
    }
    target ??= (await this.targets.known(ref)?.catch(() => null)) ?? null
    return { keys, staged, target }
  }

  async assemble(
    ref: string,
    partNumbers: number[],
    expected?: number[],
    key?: string,
    plan?: AssemblyPlan,
  ): Promise<StoredBlob> {
    const planned = (plan && this.plans.get(plan)) || (await this.look(ref))
    if (planned.ref !== ref) throw new Error(`A plan for upload ${planned.ref}, not ${ref}`)
    if (planned.target) {
      if (key !== undefined && key !== planned.target.blobKey) {
        throw new Error(`Upload ${ref} becomes blob ${planned.target.blobKey}, not ${key}: ask planAssembly`)
      }
      return this.complete(planned, planned.target, partNumbers, expected)
    }
    const blob = key ?? newKey()
    const dest = this.newObjectKey(blob)
    const parts = stagedParts(
      ref,
      this.partPrefix(ref),
      planned.staged,
      partNumbers.map((n) => [n, partName(n)]),
      expected,
    )
    const size = parts.reduce((sum, p) => sum + p.size, 0)
    if (this.partCopy && copyable(parts)) {
      try {
        // The object is built server-side: no byte passes through Wharf.
        await copyPieces(this.place, dest, parts)
        return { key: blob, size }
      } catch (err) {
        // A part restaged meanwhile: streaming them names it (its If-Match fails there too).
        if (isNotImplemented(err)) this.partCopy = false
        else if (!isPreconditionFailed(err)) throw err
      }
    }
    const measure = new Measure()
    await this.upload(
      dest,
      Readable.from(readParts(this.place, ref, parts), { objectMode: false }),
      measure,
      size,
    )
    return { key: blob, size: measure.size }
  }

  /**
   * Completes the upload's multipart upload with parts `partNumbers`: those streamed into it as
   * listed, staged ones added first (a staged copy is newer than one in the multipart upload,
   * whose arrival deletes it). Completed with the ETags listed: a part sent again since then fails
   * the completion (422).
   */
  private async complete(
    planned: Planned,
    target: UploadTarget,
    partNumbers: number[],
    expected: number[] | undefined,
  ): Promise<StoredBlob> {
    const { ref, listed, staged } = planned
    const dir = this.partPrefix(ref)
    const toAdd: StagedPart[] = []
    const etags = new Map<number, string>()
    let size = 0
    partNumbers.forEach((n, i) => {
      const name = partName(n)
      const copy = staged.get(name)
      const part = copy ?? listed.get(n)
      if (!part) throw new StagedPartError(ref, n, 'was never uploaded')
      const want = expected?.[i]
      if (want !== undefined && part.size !== want) {
        throw new StagedPartError(ref, n, `is not the ${want} bytes that were sent`)
      }
      size += part.size
      if (copy) toAdd.push({ n, key: dir + name, size: copy.size, etag: copy.etag })
      else etags.set(n, part.etag)
    })
    let next = 0
    const adder = async () => {
      while (next < toAdd.length) {
        const part = toAdd[next++]!
        etags.set(part.n, await this.addStaged(ref, target, part))
      }
    }
    await Promise.all(Array.from({ length: Math.min(ADDS_AT_ONCE, toAdd.length) }, adder))
    try {
      await this.place.client.send(
        new CompleteMultipartUploadCommand({
          ...this.targets.of(target),
          MultipartUpload: { Parts: partNumbers.map((n) => ({ PartNumber: n, ETag: etags.get(n)! })) },
        }),
      )
    } catch (err) {
      throw completionError(err, ref, partNumbers[0] ?? 1)
    }
    this.targets.forget(ref)
    // No checksums here: the background job reads the object once, as on disk.
    return { key: target.blobKey, size }
  }

  /** A staged part into the multipart upload, as the version listed; its ETag there. */
  private async addStaged(ref: string, target: UploadTarget, part: StagedPart): Promise<string> {
    const into = {
      ...this.targets.of(target),
      PartNumber: part.n,
    }
    try {
      if (this.partCopy) {
        try {
          const out = await this.place.client.send(
            new UploadPartCopyCommand({
              ...into,
              CopySource: copySource(this.place, part.key),
              CopySourceIfMatch: part.etag,
            }),
          )
          const etag = out.CopyPartResult?.ETag
          if (!etag) throw new Error(`The object store copied part ${part.n} without an ETag`)
          return etag
        } catch (err) {
          if (!isNotImplemented(err)) throw err
          this.partCopy = false
        }
      }
      const body = Readable.from(readParts(this.place, ref, [part]), { objectMode: false })
      const out = await this.place.client.send(
        new UploadPartCommand({ ...into, Body: body, ContentLength: part.size }),
      )
      if (!out.ETag) throw new Error(`The object store took part ${part.n} without an ETag`)
      return out.ETag
    } catch (err) {
      if (err instanceof StagedPartError) throw err
      if (isPreconditionFailed(err)) throw new StagedPartError(ref, part.n, 'changed while it was assembled')
      if (isNotFound(err) && !isNoSuchUpload(err)) throw new StagedPartError(ref, part.n, 'is not staged')
      throw completionError(err, ref, part.n)
    }
  }

  async checksums(
    key: string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<BlobChecksums & { size: number }> {
    const digest = new Digest()
    // The digest counts the bytes it hashes (read-buffers.ts): the body is read uncounted.
    const body = await this.object(key)
    // An abort destroys the response body, which ends the loop with the abort's error.
    if (opts.signal) addAbortSignal(opts.signal, body)
    for await (const chunk of body) digest.add(chunk as Buffer)
    const { md5, crc32, sha256, size } = digest.result(key)
    return { md5, crc32, sha256, size }
  }

  async discardUpload(ref: string): Promise<void> {
    const { keys, target } = await this.staging(ref)
    // An abort S3 refuses keeps the marker, so that the upload's parts are never forgotten
    // while S3 still bills them: the next run tries again.
    if (target) await this.targets.abort(ref, target)
    await deleteKeys(this.place, keys)
  }

  async *stagedUploads(): AsyncIterable<{ ref: string; modifiedAt: number }> {
    // Keys come in order, so one upload's parts are listed together.
    const root = `${this.place.prefix}parts/`
    let ref = ''
    let modifiedAt = 0
    for await (const o of listObjects(this.place, root)) {
      const owner = o.key.slice(root.length).split('/')[0] ?? ''
      if (!REF.test(owner)) continue
      if (owner !== ref) {
        if (ref) yield { ref, modifiedAt }
        ref = owner
        modifiedAt = 0
      }
      modifiedAt = Math.max(modifiedAt, o.modifiedAt)
    }
    if (ref) yield { ref, modifiedAt }
  }

  // ReadOptions' chunk size is for files: an object's body arrives as the socket delivers it.
  async open(key: string, range?: ByteRange): Promise<Readable> {
    // The object's bytes come from a socket: counted, so that their buffers are freed as it goes.
    return pipe(await this.object(key, range), new CountedRead(), () => {})
  }

  /** The object's bytes (or the range's), as S3 sends them. */
  private async object(key: string, range?: ByteRange): Promise<Readable> {
    const objectKey = this.objectKey(key)
    if (range) checkRange(range)
    let out: GetObjectCommandOutput
    try {
      out = await this.place.client.send(
        new GetObjectCommand({
          Bucket: this.place.bucket,
          Key: objectKey,
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      )
    } catch (err) {
      if (isNotFound(err)) throw new BlobNotFoundError(key)
      // A range starting at or past the end: no bytes, as a file read there gives.
      if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 416) {
        return Readable.from([])
      }
      throw err
    }
    const body = out.Body as Readable
    if (!range) return body
    return exactRange(body, range, out.ContentRange, out.ContentLength)
  }

  async size(key: string): Promise<number | null> {
    if (!KEY.test(key)) return null
    try {
      const head = await this.place.client.send(
        new HeadObjectCommand({ Bucket: this.place.bucket, Key: this.objectKey(key) }),
      )
      return head.ContentLength ?? 0
    } catch (err) {
      if (isNotFound(err)) return null
      throw err
    }
  }

  async copy(key: string, to?: string): Promise<string> {
    const source = this.objectKey(key)
    const copy = to ?? newKey()
    const dest = this.newObjectKey(copy)
    const size = await this.size(key)
    if (size === null) throw new BlobNotFoundError(key)
    try {
      if (size <= MAX_PART_BYTES) {
        await this.place.client.send(
          new CopyObjectCommand({
            Bucket: this.place.bucket,
            Key: dest,
            CopySource: copySource(this.place, source),
          }),
        )
      } else {
        // CopyObject stops at 5 GiB: larger objects are copied a range per part.
        const pieces = []
        for (let start = 0; start < size; start += COPY_PART_BYTES) {
          pieces.push({ key: source, range: { start, end: Math.min(size, start + COPY_PART_BYTES) - 1 } })
        }
        await copyPieces(this.place, dest, pieces)
      }
    } catch (err) {
      if (isNotFound(err)) throw new BlobNotFoundError(key)
      throw asStorageFull(err)
    }
    return copy
  }

  async delete(key: string): Promise<void> {
    if (!KEY.test(key)) return
    await this.place.client.send(
      new DeleteObjectCommand({ Bucket: this.place.bucket, Key: this.objectKey(key) }),
    )
  }

  /** Object keys of multipart uploads that Wharf's own uploads still use, however old. */
  private async uploadsInUse(): Promise<Set<string>> {
    const root = `${this.place.prefix}parts/`
    const inUse = new Set<string>()
    for await (const o of listObjects(this.place, root)) {
      const marker = parseMarker(o.key.slice(root.length).split('/').slice(1))
      if (marker) inUse.add(this.objectKey(marker.blobKey))
    }
    return inUse
  }

  async *keys(): AsyncIterable<string> {
    const root = `${this.place.prefix}blobs/`
    for await (const o of listObjects(this.place, root)) {
      const key = o.key.slice(root.length)
      if (KEY.test(key)) yield key
    }
  }

  async sweepTemporary(olderThanMs: number): Promise<number> {
    // Wall-clock times on both sides: file times here, upload and part times from the server.
    const cutoff = Date.now() - olderThanMs
    let removed = await sweepFolder(this.tmpDir, cutoff)
    try {
      removed += await abortStaleUploads(this.place, cutoff, await this.uploadsInUse())
    } catch (err) {
      // A server without ListMultipartUploads: nothing to list (a failed write aborts its own).
      if (!isNotImplemented(err)) throw err
    }
    return removed
  }
}

/**
 * Part size and parts in flight for a write: 5 MiB parts, four at once, unless its size (known
 * when assembling or sending export segments) needs larger parts to fit S3's 10,000 (5 MiB parts
 * stop at 48 GiB). Parts over 20 MiB go one at a time, so memory stays at 20 MiB up to 200 GiB,
 * and at one part's size (1/10,000 of the object) beyond. A body of unknown size (put, putPart:
 * one request) keeps 5 MiB parts.
 */
function partsFor(size?: number): { partSize: number; queueSize: number } {
  const needed = Math.ceil((size ?? 0) / MAX_UPLOAD_PARTS / MIN_PART_BYTES) * MIN_PART_BYTES
  const partSize = Math.max(MIN_PART_BYTES, needed)
  return { partSize, queueSize: partSize > 4 * MIN_PART_BYTES ? 1 : 4 }
}

/** The object name of a part; refuses anything but 1…10000, so no number can name another object. */
export function partName(n: number): string {
  if (!Number.isInteger(n) || n < 1 || n > MAX_PART) throw new Error(`Invalid part number ${n}`)
  return String(n)
}
