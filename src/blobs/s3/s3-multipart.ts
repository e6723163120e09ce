import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  ListPartsCommand,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3'
import type { Place } from './s3-objects.js'

/** A byte range of an existing object, copied server-side as one part of a new object. */
export interface Piece {
  key: string
  /** The source must still be this version (its ETag), else the copy fails. */
  etag?: string
  /** Inclusive; the whole object when absent. */
  range?: { start: number; end: number }
}

/** Part copies in flight at once for one object. */
const COPIES_AT_ONCE = 4

/** The `CopySource` header: bucket and key, the key URL-encoded but for its slashes. */
export function copySource(place: Place, key: string): string {
  return `${place.bucket}/${encodeURIComponent(key).replaceAll('%2F', '/')}`
}

/**
 * A new object made of the pieces, in order, without a byte passing through Wharf: a multipart
 * upload whose parts are UploadPartCopy requests. Every piece but the last must be 5 MiB or more
 * (S3's rule). The object appears only when the upload completes; a failure aborts it.
 */
export async function copyPieces(place: Place, dest: string, pieces: Piece[]): Promise<void> {
  const { client, bucket } = place
  const created = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: dest }))
  const uploadId = created.UploadId
  if (!uploadId) throw new Error('The object store started a multipart upload without an id')
  try {
    const etags: string[] = new Array(pieces.length)
    let next = 0
    const worker = async () => {
      while (next < pieces.length) {
        const i = next++
        const piece = pieces[i]!
        const out = await client.send(
          new UploadPartCopyCommand({
            Bucket: bucket,
            Key: dest,
            UploadId: uploadId,
            PartNumber: i + 1,
            CopySource: copySource(place, piece.key),
            ...(piece.etag ? { CopySourceIfMatch: piece.etag } : {}),
            ...(piece.range ? { CopySourceRange: `bytes=${piece.range.start}-${piece.range.end}` } : {}),
          }),
        )
        const etag = out.CopyPartResult?.ETag
        if (!etag) throw new Error(`The object store copied part ${i + 1} without an ETag`)
        etags[i] = etag
      }
    }
    await Promise.all(Array.from({ length: Math.min(COPIES_AT_ONCE, pieces.length) }, worker))
    await client.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: dest,
        UploadId: uploadId,
        MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
      }),
    )
  } catch (err) {
    await client
      .send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: dest, UploadId: uploadId }))
      .catch(() => undefined)
    throw err
  }
}

/**
 * Aborts multipart uploads under the store's prefix that nothing has added a part to since
 * `cutoff` (epoch ms): what a crash mid-put or mid-assemble left behind. An upload still running
 * for hours keeps sending parts, so it is judged by its newest part, not by when it began. Uploads
 * into the object keys in `keep` are left alone: a Wharf upload still open owns them.
 */
export async function abortStaleUploads(
  place: Place,
  cutoff: number,
  keep: Set<string> = new Set(),
): Promise<number> {
  const { client, bucket, prefix } = place
  let aborted = 0
  let keyMarker: string | undefined
  let idMarker: string | undefined
  do {
    const page = await client.send(
      new ListMultipartUploadsCommand({
        Bucket: bucket,
        Prefix: prefix,
        ...(keyMarker ? { KeyMarker: keyMarker } : {}),
        ...(idMarker ? { UploadIdMarker: idMarker } : {}),
      }),
    )
    for (const u of page.Uploads ?? []) {
      if (!u.Key || !u.UploadId || keep.has(u.Key) || (u.Initiated?.getTime() ?? 0) >= cutoff) continue
      if ((await newestPart(place, u.Key, u.UploadId)) >= cutoff) continue
      await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: u.Key, UploadId: u.UploadId }))
      aborted++
    }
    keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined
    idMarker = page.IsTruncated ? page.NextUploadIdMarker : undefined
  } while (keyMarker)
  return aborted
}

async function newestPart(place: Place, key: string, uploadId: string): Promise<number> {
  let newest = 0
  let marker: string | undefined
  do {
    const page = await place.client.send(
      new ListPartsCommand({
        Bucket: place.bucket,
        Key: key,
        UploadId: uploadId,
        ...(marker ? { PartNumberMarker: marker } : {}),
      }),
    )
    for (const p of page.Parts ?? []) newest = Math.max(newest, p.LastModified?.getTime() ?? 0)
    marker = page.IsTruncated ? page.NextPartNumberMarker : undefined
  } while (marker)
  return newest
}
