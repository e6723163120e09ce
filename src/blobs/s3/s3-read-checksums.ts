import type { Readable } from 'node:stream'
import { GetObjectCommand } from '@aws-sdk/client-s3'
import type { BlobInfo } from '../blob-store.js'
import { Digest } from '../digest.js'
import type { Place } from './s3-objects.js'

/**
 * md5 and CRC-32 of an object read back whole: in direct mode the parts never passed through
 * Wharf, and `assemble` still owes the File its checksums. Goes once checksums are computed after
 * the upload instead.
 */
export async function readChecksums(place: Place, objectKey: string, key: string): Promise<BlobInfo> {
  const out = await place.client.send(new GetObjectCommand({ Bucket: place.bucket, Key: objectKey }))
  const digest = new Digest()
  for await (const chunk of out.Body as Readable) digest.add(chunk as Buffer)
  return digest.result(key)
}
