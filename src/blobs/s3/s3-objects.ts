import crypto from 'node:crypto'
import { Transform, type TransformCallback } from 'node:stream'
import { DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3'
import { BlobTooLargeError } from '../blob-store.js'
import { bytesRead } from '../read-buffers.js'

/** Where a store's objects live: one bucket, and a prefix inside it (empty, or ending in `/`). */
export interface Place {
  client: S3Client
  bucket: string
  prefix: string
}

/** The largest part of a multipart upload, and the largest object one CopyObject copies. */
export const MAX_PART_BYTES = 5 * 1024 ** 3
/** Every part of a multipart upload but the last must be at least this large. */
export const MIN_PART_BYTES = 5 * 1024 ** 2

interface S3ErrorShape {
  name?: string
  Code?: string
  $metadata?: { httpStatusCode?: number }
}

const shape = (err: unknown): S3ErrorShape => (err ?? {}) as S3ErrorShape

/** The object (or the copy source) is not there: GetObject says NoSuchKey, HeadObject a bare 404. */
export function isNotFound(err: unknown): boolean {
  const e = shape(err)
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.Code === 'NoSuchKey'
}

/** The server does not implement the request (a smaller S3-compatible server, say). */
export function isNotImplemented(err: unknown): boolean {
  const e = shape(err)
  return e.name === 'NotImplemented' || e.$metadata?.httpStatusCode === 501
}

/** A conditional read or copy found another object than the one listed (If-Match failed). */
export function isPreconditionFailed(err: unknown): boolean {
  const e = shape(err)
  return e.name === 'PreconditionFailed' || e.$metadata?.httpStatusCode === 412
}

/**
 * What some S3-compatible servers answer when their disks or the bucket's quota are full. Given
 * the file system's EDQUOT code, the storage-full guard answers them as it answers a full disk.
 */
const FULL = new Set(['XMinioStorageFull', 'QuotaExceeded', 'XMinioAdminBucketQuotaExceeded'])
export function asStorageFull(err: unknown): unknown {
  const e = shape(err)
  const name = e.name ?? e.Code
  if (name && FULL.has(name) && err instanceof Error) return Object.assign(err, { code: 'EDQUOT' })
  return err
}

/** Every object under a prefix, in key order, a page at a time. */
export async function* listObjects(
  place: Place,
  prefix: string,
): AsyncIterable<{ key: string; size: number; etag: string; modifiedAt: number }> {
  let token: string | undefined
  do {
    const page = await place.client.send(
      new ListObjectsV2Command({
        Bucket: place.bucket,
        Prefix: prefix,
        ...(token ? { ContinuationToken: token } : {}),
      }),
    )
    for (const o of page.Contents ?? []) {
      if (o.Key === undefined) continue
      yield {
        key: o.Key,
        size: o.Size ?? 0,
        etag: o.ETag ?? '',
        modifiedAt: o.LastModified?.getTime() ?? 0,
      }
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined
  } while (token)
}

/** Deletes objects, a thousand per request (S3's limit); a key already gone is no error. */
export async function deleteKeys(place: Place, keys: string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 1000) {
    const batch = keys.slice(i, i + 1000)
    const out = await place.client.send(
      new DeleteObjectsCommand({
        Bucket: place.bucket,
        Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
      }),
    )
    const failed = out.Errors?.[0]
    if (failed) throw new Error(`Could not delete ${failed.Key}: ${failed.Code} ${failed.Message}`)
  }
}

/** Counts the bytes passing through and stops past a limit, as the local store's counter does. */
export class Measure extends Transform {
  size = 0
  constructor(private readonly maxBytes = Number.POSITIVE_INFINITY) {
    super()
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.size += chunk.length
    bytesRead(chunk.length)
    if (this.size > this.maxBytes) done(new BlobTooLargeError(this.maxBytes))
    else done(null, chunk)
  }
}

/** A fresh blob key: 32 random hex characters. */
export function newKey(): string {
  return crypto.randomBytes(16).toString('hex')
}
