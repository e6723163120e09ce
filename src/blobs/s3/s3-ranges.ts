import { Readable } from 'node:stream'
import type { ByteRange } from '../blob-store.js'

export function checkRange({ start, end }: ByteRange): void {
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) {
    throw new RangeError(`Invalid byte range ${start}-${end}`)
  }
}

/**
 * The body of a ranged GET, checked: a server that ignored the range (answering 200 with the
 * whole object) is an error rather than wrong bytes, and one that sent more than was asked (s3rver
 * reads `bytes=0-0` as `bytes=0-`) is cut to the range.
 */
export function exactRange(
  body: Readable,
  range: ByteRange,
  contentRange?: string,
  length?: number,
): Readable {
  if (!contentRange?.startsWith(`bytes ${range.start}-`)) {
    body.destroy()
    throw new Error(
      `The object store answered a range request for bytes ${range.start}- with ${contentRange}`,
    )
  }
  const wanted = range.end - range.start + 1
  if (length === undefined || length <= wanted) return body
  async function* cut() {
    let left = wanted
    try {
      for await (const chunk of body) {
        const bytes = chunk as Buffer
        if (bytes.length >= left) {
          yield bytes.subarray(0, left)
          return
        }
        left -= bytes.length
        yield bytes
      }
    } finally {
      body.destroy()
    }
  }
  return Readable.from(cut(), { objectMode: false })
}
