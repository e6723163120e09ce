import crypto from 'node:crypto'
import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import { useNativeCrc32 } from '../src/http/zip-stream.js'

/** CRC-32 (IEEE 802.3, as ZIP's) computed the textbook way, a bit at a time. */
function reference(buf: Buffer, previous = 0): number {
  let crc = ~previous >>> 0
  for (const byte of buf) {
    crc ^= byte
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1
  }
  return ~crc >>> 0
}

describe('the checksum yazl writes into ZIPs', () => {
  const crc32 = createRequire(createRequire(import.meta.url).resolve('yazl'))('buffer-crc32') as {
    unsigned: (buf: Buffer, previous?: number) => number
  }

  it('is the CRC-32 of ZIP, chained across chunks as yazl chains it', () => {
    useNativeCrc32()
    expect(crc32.unsigned(Buffer.from('123456789'))).toBe(0xcbf43926)
    expect(crc32.unsigned(Buffer.alloc(0))).toBe(0)
    for (const size of [1, 7, 4096, 100_003]) {
      const buf = crypto.randomBytes(size)
      expect(crc32.unsigned(buf)).toBe(reference(buf))
      const cut = Math.floor(size / 3)
      const chained = crc32.unsigned(buf.subarray(cut), crc32.unsigned(buf.subarray(0, cut)))
      expect(chained).toBe(reference(buf))
    }
  })
})
