import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { contentDisposition } from '../../api/content-disposition.js'
import { type AssemblyPlan, StagedPartError, type StoredBlob } from '../blob-store.js'
import { newKey, partName, S3BlobStore, type S3BlobStoreOptions } from './s3-blob-store.js'
import { deleteKeys, listObjects } from './s3-objects.js'

/** SigV4's longest validity for a presigned URL (7 days). */
const MAX_PRESIGNED_SECONDS = 604_800
/** Direct uploads whose id this process remembers (an id never changes: the cache is never stale). */
const REMEMBERED = 10_000
const KEY = /^[0-9a-f]{32}$/

/** The S3 multipart upload behind a Wharf upload whose parts go straight to the bucket. */
interface DirectUpload {
  /** The blob the upload becomes: the multipart upload's object is `blobs/<blobKey>`. */
  blobKey: string
  uploadId: string
}

/** The parts S3 holds for a multipart upload, by number (a part sent again: its last copy). */
type ListedParts = Map<number, { size: number; etag: string }>

/** What planAssembly found, which assemble uses instead of looking again. */
interface Planned {
  ref: string
  upload: DirectUpload | null
  listed: ListedParts
}

export interface S3DirectBlobStoreOptions extends S3BlobStoreOptions {
  /** The clock presigned URLs are signed with (Wharf's own, so that both kinds of link agree). */
  now?: () => number
}

/**
 * The S3 store in direct mode: clients PUT parts to presigned `UploadPart` URLs of one S3
 * multipart upload per Wharf upload, and download from presigned `GetObject` URLs; Wharf only
 * signs. Everything else (staged parts sent through Wharf by the protocol front ends, copies,
 * exports) is the proxy store's.
 *
 * Which multipart upload belongs to which Wharf upload is itself kept in the bucket, as the empty
 * object `parts/<ref>/direct/<blobKey>/<uploadId>`, beside the upload's staged parts: every
 * process sharing the bucket finds it with one listing, the janitor sees the ref among the staged
 * uploads (discardUpload aborts the multipart upload and removes the marker), and S3's
 * ListMultipartUploads, which not every server has, is never needed to find it.
 */
export class S3DirectBlobStore extends S3BlobStore {
  private readonly now: () => number
  private readonly opened = new Map<string, Promise<DirectUpload>>()
  /** Each plan this store handed out, with what it found (gone with the plan). */
  private readonly plans = new WeakMap<AssemblyPlan, Planned>()

  constructor(opts: S3DirectBlobStoreOptions) {
    super(opts)
    this.now = opts.now ?? Date.now
  }

  async directPartUrl(ref: string, partNumber: number, expiresIn: number): Promise<string> {
    const n = Number(partName(partNumber))
    const upload = await this.openDirect(ref)
    return getSignedUrl(
      this.place.client,
      new UploadPartCommand({
        Bucket: this.place.bucket,
        Key: this.objectKey(upload.blobKey),
        UploadId: upload.uploadId,
        PartNumber: n,
      }),
      this.signing(expiresIn),
    )
  }

  /**
   * One listing of the upload's marker (none when this process opened it or saw it before) and,
   * where a presigned part was ever asked for, one ListParts: `action=end` needs both the key and
   * the parts, and assemble, given the plan, asks S3 for neither again.
   */
  async planAssembly(ref: string): Promise<AssemblyPlan> {
    const upload = await this.find(ref)
    const listed: ListedParts = upload ? await this.listParts(ref, upload) : new Map()
    const plan: AssemblyPlan = {
      key: upload?.blobKey ?? null,
      directParts: [...listed.entries()].map(([partNumber, p]) => ({ partNumber, size: p.size })),
    }
    this.plans.set(plan, { ref, upload, listed })
    return plan
  }

  async directDownloadUrl(key: string, opts: { fileName: string; expiresIn: number }): Promise<string> {
    return getSignedUrl(
      this.place.client,
      new GetObjectCommand({
        Bucket: this.place.bucket,
        Key: this.objectKey(key),
        ResponseContentDisposition: contentDisposition(opts.fileName),
      }),
      this.signing(opts.expiresIn),
    )
  }

  async directOrigins(): Promise<string[]> {
    // The SDK decides the host (path or virtual-host style, the region's endpoint): ask it.
    return [new URL(await this.directDownloadUrl('0'.repeat(32), { fileName: 'x', expiresIn: 1 })).origin]
  }

  override async assemble(
    ref: string,
    partNumbers: number[],
    expected?: number[],
    key?: string,
    plan?: AssemblyPlan,
  ): Promise<StoredBlob> {
    const planned = plan ? this.plans.get(plan) : undefined
    if (planned && planned.ref !== ref) throw new Error(`A plan for upload ${planned.ref}, not ${ref}`)
    const upload = planned ? planned.upload : await this.find(ref)
    // No presigned part was ever asked for: the parts were staged through Wharf.
    if (!upload) return super.assemble(ref, partNumbers, expected, key)
    if (key !== undefined && key !== upload.blobKey) {
      throw new Error(`Upload ${ref} becomes blob ${upload.blobKey}, not ${key}: ask planAssembly`)
    }
    // Completed with the ETags listed: a part sent again since then fails the completion (422).
    const listed = planned?.listed ?? (await this.listParts(ref, upload))
    const parts = partNumbers.map((n, i) => {
      const part = listed.get(n)
      if (!part) throw new StagedPartError(ref, n, 'was never uploaded')
      const want = expected?.[i]
      if (want !== undefined && part.size !== want) {
        throw new StagedPartError(ref, n, `is not the ${want} bytes listed before`)
      }
      return { PartNumber: n, ETag: part.etag }
    })
    const objectKey = this.objectKey(upload.blobKey)
    try {
      await this.place.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.place.bucket,
          Key: objectKey,
          UploadId: upload.uploadId,
          MultipartUpload: { Parts: parts },
        }),
      )
    } catch (err) {
      throw completionError(err, ref, partNumbers[0] ?? 1)
    }
    // No checksums here: the background job reads the object once, as on disk.
    return { key: upload.blobKey, size: partNumbers.reduce((sum, n) => sum + listed.get(n)!.size, 0) }
  }

  override async discardUpload(ref: string): Promise<void> {
    // One listing of the upload's staging folder: its staged parts, and the marker of its
    // multipart upload if one was opened (or the one this process opened, should it be listed late).
    const dir = this.partPrefix(ref)
    const keys = await this.stagedKeys(ref)
    let upload: DirectUpload | null = null
    for (const key of keys) upload ??= parseMarker(key.slice(dir.length).split('/'))
    upload ??= (await this.opened.get(ref)?.catch(() => null)) ?? null
    if (upload) {
      try {
        await this.place.client.send(
          new AbortMultipartUploadCommand({
            Bucket: this.place.bucket,
            Key: this.objectKey(upload.blobKey),
            UploadId: upload.uploadId,
          }),
        )
      } catch (err) {
        // Completed or aborted already: nothing left to give up. Anything else is retried later,
        // the marker kept, so that the upload's parts are never forgotten while S3 still bills them.
        if (!isNoSuchUpload(err)) throw err
      }
      this.opened.delete(ref)
    }
    await deleteKeys(this.place, keys)
  }

  protected override async uploadsInUse(): Promise<Set<string>> {
    const root = `${this.place.prefix}parts/`
    const inUse = new Set<string>()
    for await (const o of listObjects(this.place, root)) {
      const marker = parseMarker(o.key.slice(root.length).split('/').slice(1))
      if (marker) inUse.add(this.objectKey(marker.blobKey))
    }
    return inUse
  }

  /** Presigned for `expiresIn` seconds from Wharf's now, within what SigV4 allows. */
  private signing(expiresIn: number) {
    return {
      expiresIn: Math.min(Math.max(1, Math.floor(expiresIn)), MAX_PRESIGNED_SECONDS),
      signingDate: new Date(this.now()),
    }
  }

  private markerPrefix(ref: string): string {
    return `${this.partPrefix(ref)}direct/`
  }

  /** The upload's multipart upload, opened on the first call. */
  private openDirect(ref: string): Promise<DirectUpload> {
    let opening = this.opened.get(ref)
    if (!opening) {
      opening = this.find(ref).then((found) => found ?? this.create(ref))
      this.remember(ref, opening)
    }
    return opening
  }

  /** The upload's multipart upload, or null if no presigned part was asked for. */
  private async find(ref: string): Promise<DirectUpload | null> {
    const known = this.opened.get(ref)
    if (known) return known
    const dir = this.markerPrefix(ref)
    for await (const o of listObjects(this.place, dir)) {
      const marker = parseMarker(['direct', ...o.key.slice(dir.length).split('/')])
      if (marker) {
        const found = Promise.resolve(marker)
        this.remember(ref, found)
        return found
      }
    }
    return null
  }

  private async create(ref: string): Promise<DirectUpload> {
    const blobKey = newKey()
    const { client, bucket } = this.place
    const created = await client.send(
      new CreateMultipartUploadCommand({ Bucket: bucket, Key: this.objectKey(blobKey) }),
    )
    const uploadId = created.UploadId
    if (!uploadId) throw new Error('The object store started a multipart upload without an id')
    try {
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: `${this.markerPrefix(ref)}${blobKey}/${encodeURIComponent(uploadId)}`,
          Body: new Uint8Array(0),
          ContentLength: 0,
        }),
      )
    } catch (err) {
      await client
        .send(
          new AbortMultipartUploadCommand({
            Bucket: bucket,
            Key: this.objectKey(blobKey),
            UploadId: uploadId,
          }),
        )
        .catch(() => undefined)
      throw err
    }
    return { blobKey, uploadId }
  }

  private remember(ref: string, upload: Promise<DirectUpload>): void {
    if (this.opened.size >= REMEMBERED) {
      const oldest = this.opened.keys().next().value
      if (oldest !== undefined) this.opened.delete(oldest)
    }
    this.opened.set(ref, upload)
    upload.catch(() => this.opened.delete(ref))
  }

  /** Every part S3 holds for the upload, by number (a part sent again: its last copy). */
  private async listParts(ref: string, upload: DirectUpload): Promise<ListedParts> {
    const parts: ListedParts = new Map()
    let marker: string | undefined
    try {
      do {
        const page = await this.place.client.send(
          new ListPartsCommand({
            Bucket: this.place.bucket,
            Key: this.objectKey(upload.blobKey),
            UploadId: upload.uploadId,
            ...(marker ? { PartNumberMarker: marker } : {}),
          }),
        )
        for (const p of page.Parts ?? []) {
          if (p.PartNumber !== undefined && p.ETag)
            parts.set(p.PartNumber, { size: p.Size ?? 0, etag: p.ETag })
        }
        marker = page.IsTruncated ? page.NextPartNumberMarker : undefined
      } while (marker)
    } catch (err) {
      if (isNoSuchUpload(err))
        throw new StagedPartError(ref, 1, 'is gone: the upload was completed or given up')
      throw err
    }
    return new Map([...parts.entries()].sort(([a], [b]) => a - b))
  }
}

/** `direct/<blobKey>/<uploadId>` under an upload's staging folder, or null for any other object. */
function parseMarker(segments: string[]): DirectUpload | null {
  const [direct, blobKey, id] = segments
  if (direct !== 'direct' || !blobKey || !KEY.test(blobKey) || !id || segments.length !== 3) return null
  try {
    return { blobKey, uploadId: decodeURIComponent(id) }
  } catch {
    return null
  }
}

function isNoSuchUpload(err: unknown): boolean {
  const e = (err ?? {}) as { name?: string; $metadata?: { httpStatusCode?: number } }
  return e.name === 'NoSuchUpload' || e.$metadata?.httpStatusCode === 404
}

/**
 * What S3 refusing to complete means for the upload: a part gone or sent again since it was listed
 * (InvalidPart), one smaller than S3's 5 MiB minimum for every part but the last (EntityTooSmall),
 * or the upload itself gone (completed by a concurrent end, or given up).
 */
function completionError(err: unknown, ref: string, first: number): unknown {
  const e = (err ?? {}) as { name?: string }
  if (isNoSuchUpload(err))
    return new StagedPartError(ref, first, 'is gone: the upload was completed or given up')
  if (e.name === 'InvalidPart' || e.name === 'InvalidPartOrder') {
    return new StagedPartError(ref, first, 'changed while the upload was completed')
  }
  if (e.name === 'EntityTooSmall') {
    return new StagedPartError(ref, first, 'or another but the last is under 5 MiB, which S3 refuses')
  }
  return err
}
