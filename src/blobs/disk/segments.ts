import fs from 'node:fs'
import path from 'node:path'
import { Readable } from 'node:stream'
import type { ByteRange } from '../blob-store.js'

/** Bytes a file is read at a time unless the reader asks for more (ReadOptions.chunkBytes). */
export const READ_CHUNK_BYTES = 64 * 1024

export function checkRange({ start, end }: ByteRange): void {
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) {
    throw new RangeError(`Invalid byte range ${start}-${end}`)
  }
}

/** The bytes of an assembled blob (or a range of them), segment after segment. */
export function readSegments(
  dir: string,
  sizes: number[],
  range?: ByteRange,
  chunkBytes = READ_CHUNK_BYTES,
): Readable {
  const total = sizes.reduce((a, b) => a + b, 0)
  const start = range?.start ?? 0
  const end = Math.min(range?.end ?? total - 1, total - 1)
  async function* bytes() {
    let offset = 0
    for (const [i, size] of sizes.entries()) {
      const first = offset
      offset += size
      if (size === 0 || offset <= start) continue
      if (first > end) break
      const from = Math.max(0, start - first)
      const to = Math.min(size - 1, end - first)
      for await (const chunk of fs.createReadStream(path.join(dir, String(i + 1)), {
        start: from,
        end: to,
        highWaterMark: chunkBytes,
      }))
        yield chunk as Buffer
    }
  }
  return Readable.from(bytes(), { objectMode: false, highWaterMark: 1024 * 1024 })
}
