import type { Readable } from 'node:stream'
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import type { Place } from './s3-objects.js'

export interface StreamUploadOptions {
  /** Bytes per part (5 MiB at least, as S3 requires of every part but the last). */
  partSize: number
  /** Parts sent at once; also the number of part buffers, which are reused. */
  queueSize: number
}

/**
 * Part buffers left by finished uploads, by size, for the next ones: each part upload (PUT
 * /upload_parts) is an upload of its own, and a fresh 5 MiB buffer for each of them left tens of
 * megabytes of dead buffers outside the JavaScript heap between two garbage collections, and
 * each new one cost page faults (twice the server CPU for the parts of a 1 GiB upload). The pool is emptied once
 * no upload has used it for a few seconds, so an idle server holds none of them.
 */
const spare = new Map<number, Buffer[]>()
/** At most this many spare buffers of one size (four parts in flight, as the SDKs send them). */
const SPARE_PER_SIZE = 4
const SPARE_IDLE_MS = 5_000
let spareTimer: NodeJS.Timeout | null = null

function takeBuffer(size: number): Buffer {
  return spare.get(size)?.pop() ?? Buffer.allocUnsafe(size)
}

/** Buffers no request is reading any more (after a failed send, the buffer is dropped instead). */
function giveBuffers(size: number, buffers: Buffer[]): void {
  const list = spare.get(size) ?? []
  spare.set(size, list)
  for (const b of buffers) if (list.length < SPARE_PER_SIZE) list.push(b)
  if (spareTimer) spareTimer.refresh()
  else {
    spareTimer = setTimeout(() => {
      spare.clear()
      spareTimer = null
    }, SPARE_IDLE_MS)
    spareTimer.unref()
  }
}

/**
 * Streams a body of unknown length into a new object: one PutObject when it fits in one part,
 * else a multipart upload, aborted on failure. The object appears whole or not at all.
 *
 * Not lib-storage's `Upload`: it allocates a new part-sized buffer for every part, and the
 * garbage collector frees them late (they are memory outside the JavaScript heap), so a 50 MB
 * upload raised the process's memory by 60 MB. Here `queueSize` buffers are allocated once per
 * upload (or taken from those earlier uploads left) and refilled, so memory stays at
 * `partSize × queueSize` whatever the size.
 */
export async function uploadStream(
  place: Place,
  key: string,
  body: Readable,
  opts: StreamUploadOptions,
): Promise<void> {
  const { client, bucket } = place
  const source = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>
  let rest: Buffer | null = null
  let ended = false
  /** Fills `buffer` from the body; returns how many bytes it holds (less than full only at the end). */
  const fill = async (buffer: Buffer): Promise<number> => {
    let used = 0
    while (used < buffer.length) {
      if (!rest) {
        if (ended) break
        const next = await source.next()
        if (next.done) {
          ended = true
          break
        }
        rest = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value)
      }
      const n = rest.copy(buffer, used)
      used += n
      rest = n < rest.length ? rest.subarray(n) : null
    }
    return used
  }
  const atEnd = async (): Promise<boolean> => {
    if (rest || ended) return !rest
    const next = await source.next()
    if (next.done) ended = true
    else rest = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value)
    return ended
  }

  const first = takeBuffer(opts.partSize)
  const firstLength = await fill(first)
  if (await atEnd()) {
    await client.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: key,
        Body: first.subarray(0, firstLength),
        ContentLength: firstLength,
      }),
    )
    giveBuffers(opts.partSize, [first])
    return
  }

  const created = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }))
  const uploadId = created.UploadId
  if (!uploadId) throw new Error('The object store started a multipart upload without an id')
  const etags: string[] = []
  const free: Buffer[] = []
  const inFlight = new Set<Promise<void>>()
  let failure: { err: unknown } | null = null
  const send = (partNumber: number, buffer: Buffer, length: number) => {
    const sending: Promise<void> = client
      .send(
        new UploadPartCommand({
          Bucket: bucket,
          Key: key,
          UploadId: uploadId,
          PartNumber: partNumber,
          Body: buffer.subarray(0, length),
          ContentLength: length,
        }),
      )
      .then((out) => {
        if (!out.ETag) throw new Error(`The object store stored part ${partNumber} without an ETag`)
        etags[partNumber - 1] = out.ETag
        free.push(buffer)
      })
      .catch((err: unknown) => {
        failure ??= { err }
      })
      .finally(() => inFlight.delete(sending))
    inFlight.add(sending)
  }
  try {
    send(1, first, firstLength)
    let allocated = 1
    for (let partNumber = 2; !failure && !(await atEnd()); partNumber++) {
      let buffer = free.pop()
      if (!buffer && allocated < opts.queueSize) {
        buffer = takeBuffer(opts.partSize)
        allocated++
      }
      while (!buffer && !failure) {
        await Promise.race(inFlight)
        buffer = free.pop()
      }
      if (!buffer) break
      send(partNumber, buffer, await fill(buffer))
    }
    await Promise.all(inFlight)
    if (failure) throw (failure as { err: unknown }).err
    await client.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: key,
        UploadId: uploadId,
        MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
      }),
    )
    giveBuffers(opts.partSize, free)
  } catch (err) {
    await Promise.all(inFlight)
    // A failed abort leaves parts for the janitor's sweep; the cause is what the caller needs.
    await client
      .send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }))
      .catch(() => undefined)
    throw err
  }
}
