import {
  AbortMultipartUploadCommand,
  CreateMultipartUploadCommand,
  ListPartsCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3'
import { StagedPartError } from '../blob-store.js'
import { listObjects, newKey, type Place } from './s3-objects.js'

/** Multipart uploads whose id this process remembers (an id never changes: the cache is never stale). */
const REMEMBERED = 10_000
const KEY = /^[0-9a-f]{32}$/

/** The S3 multipart upload behind a Wharf upload whose parts go into it as they arrive. */
export interface UploadTarget {
  /** The blob the upload becomes: the multipart upload's object is `blobs/<blobKey>`. */
  blobKey: string
  uploadId: string
}

/** The parts S3 holds for a multipart upload, by number (a part sent again: its last copy). */
export type ListedParts = Map<number, { size: number; etag: string }>

/**
 * One S3 multipart upload per Wharf upload, aimed at the blob it will become, into which parts go
 * as they arrive (presigned URLs in direct mode, Wharf's part route where a part's length is
 * known), so that ending the upload is one CompleteMultipartUpload.
 *
 * Which multipart upload belongs to which Wharf upload is kept in the bucket, as the empty object
 * `parts/<ref>/direct/<blobKey>/<uploadId>` (`markerDir(ref)` + `<blobKey>/<uploadId>`), beside
 * the upload's staged parts: every process sharing the bucket finds it with one listing, the
 * janitor sees the ref among the staged uploads, and S3's ListMultipartUploads, which not every
 * server has, is never needed to find it.
 */
export class UploadTargets {
  private readonly opened = new Map<string, Promise<UploadTarget>>()

  constructor(
    private readonly place: Place,
    /** The object of a blob key. */
    private readonly objectKey: (key: string) => string,
    /** The folder of an upload's marker, ending in `direct/`. */
    private readonly markerDir: (ref: string) => string,
  ) {}

  /** What names a target's multipart upload in a request: its bucket, object and id. */
  of(target: UploadTarget): { Bucket: string; Key: string; UploadId: string } {
    return { Bucket: this.place.bucket, Key: this.objectKey(target.blobKey), UploadId: target.uploadId }
  }

  /** The upload's multipart upload, opened (with its marker) on the first call. */
  open(ref: string): Promise<UploadTarget> {
    let opening = this.opened.get(ref)
    if (!opening) {
      opening = this.find(ref).then((found) => found ?? this.create(ref))
      this.remember(ref, opening)
    }
    return opening
  }

  /** The upload's multipart upload, or null if none was opened. */
  async find(ref: string): Promise<UploadTarget | null> {
    const known = this.opened.get(ref)
    if (known) return known
    const dir = this.markerDir(ref)
    for await (const o of listObjects(this.place, dir)) {
      const marker = parseMarker(['direct', ...o.key.slice(dir.length).split('/')])
      if (marker) {
        this.remember(ref, Promise.resolve(marker))
        return marker
      }
    }
    return null
  }

  /** What this process opened or found for the upload, without asking S3. */
  known(ref: string): Promise<UploadTarget> | undefined {
    return this.opened.get(ref)
  }

  /** A marker found in a listing of the upload's staging folder. */
  found(ref: string, target: UploadTarget): void {
    if (!this.opened.has(ref)) this.remember(ref, Promise.resolve(target))
  }

  /** The upload was completed or given up: nothing more goes into it. */
  forget(ref: string): void {
    this.opened.delete(ref)
  }

  /** Gives the multipart upload up; one already completed or aborted is no error. */
  async abort(ref: string, target: UploadTarget): Promise<void> {
    try {
      await this.place.client.send(
        new AbortMultipartUploadCommand({
          ...this.of(target),
        }),
      )
    } catch (err) {
      if (!isNoSuchUpload(err)) throw err
    }
    this.forget(ref)
  }

  /** Every part S3 holds for the upload, by number, in order. */
  async listParts(ref: string, target: UploadTarget): Promise<ListedParts> {
    const parts: ListedParts = new Map()
    let marker: string | undefined
    try {
      do {
        const page = await this.place.client.send(
          new ListPartsCommand({
            ...this.of(target),
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
      if (isNoSuchUpload(err)) throw uploadGone(ref, 1)
      throw err
    }
    return new Map([...parts.entries()].sort(([a], [b]) => a - b))
  }

  private async create(ref: string): Promise<UploadTarget> {
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
          Key: `${this.markerDir(ref)}${blobKey}/${encodeURIComponent(uploadId)}`,
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

  private remember(ref: string, target: Promise<UploadTarget>): void {
    if (this.opened.size >= REMEMBERED) {
      const oldest = this.opened.keys().next().value
      if (oldest !== undefined) this.opened.delete(oldest)
    }
    this.opened.set(ref, target)
    target.catch(() => this.opened.delete(ref))
  }
}

/** `direct/<blobKey>/<uploadId>` under an upload's staging folder, or null for any other object. */
export function parseMarker(segments: string[]): UploadTarget | null {
  const [direct, blobKey, id] = segments
  if (direct !== 'direct' || !blobKey || !KEY.test(blobKey) || !id || segments.length !== 3) return null
  try {
    return { blobKey, uploadId: decodeURIComponent(id) }
  } catch {
    return null
  }
}

export function isNoSuchUpload(err: unknown): boolean {
  const e = (err ?? {}) as { name?: string; $metadata?: { httpStatusCode?: number } }
  return e.name === 'NoSuchUpload' || e.$metadata?.httpStatusCode === 404
}

/** The multipart upload is gone: completed by a concurrent end, or given up. */
export function uploadGone(ref: string, part: number): StagedPartError {
  return new StagedPartError(ref, part, 'is gone: the upload was completed or given up')
}

/**
 * What S3 refusing to complete means for the upload: a part gone or sent again since it was listed
 * (InvalidPart), one smaller than S3's 5 MiB minimum for every part but the last (EntityTooSmall),
 * or the upload itself gone (completed by a concurrent end, or given up).
 */
export function completionError(err: unknown, ref: string, first: number): unknown {
  const e = (err ?? {}) as { name?: string }
  if (isNoSuchUpload(err)) return uploadGone(ref, first)
  if (e.name === 'InvalidPart' || e.name === 'InvalidPartOrder') {
    return new StagedPartError(ref, first, 'changed while the upload was completed')
  }
  if (e.name === 'EntityTooSmall') {
    return new StagedPartError(ref, first, 'or another but the last is under 5 MiB, which S3 refuses')
  }
  return err
}
