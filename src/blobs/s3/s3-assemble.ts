import type { Readable } from 'node:stream'
import { GetObjectCommand } from '@aws-sdk/client-s3'
import { StagedPartError } from '../blob-store.js'
import { isNotFound, isPreconditionFailed, MAX_PART_BYTES, MIN_PART_BYTES, type Place } from './s3-objects.js'

export interface StagedPart {
  n: number
  key: string
  size: number
  etag: string
}

/**
 * The staged objects of the parts asked for, in that order, from a listing of the upload's staging
 * folder `dir` (size and ETag by part name): a missing part, or one not the size it had when it
 * was stored, is a StagedPartError.
 */
export function stagedParts(
  ref: string,
  dir: string,
  staged: Map<string, { size: number; etag: string }>,
  parts: [number, string][],
  expected?: number[],
): StagedPart[] {
  return parts.map(([n, name], i) => {
    const found = staged.get(name)
    if (!found) throw new StagedPartError(ref, n, 'is not staged')
    const want = expected?.[i]
    if (want !== undefined && found.size !== want) {
      throw new StagedPartError(ref, n, `is not the ${want} bytes that were sent`)
    }
    return { n, key: dir + name, size: found.size, etag: found.etag }
  })
}

/** The staged parts' bytes, one after another, each exactly the version that was listed. */
export async function* readParts(place: Place, ref: string, parts: StagedPart[]): AsyncGenerator<Buffer> {
  for (const part of parts) {
    const out = await place.client
      .send(new GetObjectCommand({ Bucket: place.bucket, Key: part.key, IfMatch: part.etag }))
      .catch((err: unknown) => {
        if (isNotFound(err)) throw new StagedPartError(ref, part.n, 'is not staged')
        if (isPreconditionFailed(err))
          throw new StagedPartError(ref, part.n, 'changed while it was assembled')
        throw err
      })
    for await (const chunk of out.Body as Readable) yield chunk as Buffer
  }
}

/** Whether S3 can build the object from the parts by UploadPartCopy alone (its part-size rules). */
export function copyable(parts: { size: number }[]): boolean {
  if (parts.length === 0) return false
  return parts.every(
    (p, i) => p.size > 0 && p.size <= MAX_PART_BYTES && (i === parts.length - 1 || p.size >= MIN_PART_BYTES),
  )
}
