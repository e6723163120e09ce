import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import type { ReadableFile, ReadRange } from '../src/modules/files/vfs/file-system.js'
import { ReadHandle } from '../src/sftp/sftp-handles.js'
import { MAX_OPEN_READ_STREAMS, ReadStreams } from '../src/sftp/sftp-read-streams.js'

/** A file whose streams are counted while open, each reading ahead as the store's streams do. */
function countedFile(bytes: Buffer, open: Set<Readable>): ReadableFile {
  return {
    entry: { size: bytes.length } as ReadableFile['entry'],
    async read(range?: ReadRange) {
      let at = range?.start ?? 0
      const stream = new Readable({
        highWaterMark: 1024,
        read() {
          this.push(at < bytes.length ? bytes.subarray(at, at + 256) : null)
          at += 256
        },
      })
      open.add(stream)
      stream.once('close', () => open.delete(stream))
      return stream
    },
  }
}

describe('SFTP read streams of one connection', () => {
  it(`keeps at most ${MAX_OPEN_READ_STREAMS} files open with their read-ahead, and a closed one reads on where it stood`, async () => {
    const open = new Set<Readable>()
    const streams = new ReadStreams()
    const files = Array.from({ length: 40 }, (_, i) => Buffer.alloc(4096, i))
    const handles = files.map((f) => new ReadHandle(countedFile(f, open), streams))

    for (const [i, h] of handles.entries()) expect(await h.read(0, 1)).toEqual(Buffer.alloc(1, i))
    // Streams close asynchronously after destroy().
    await new Promise((resolve) => setImmediate(resolve))
    expect(open.size).toBe(MAX_OPEN_READ_STREAMS)
    expect(streams.size).toBe(MAX_OPEN_READ_STREAMS)

    for (const [i, h] of handles.entries()) {
      expect(await h.read(1, 3000)).toEqual(Buffer.alloc(3000, i))
      expect(await h.read(3001, 4000)).toEqual(Buffer.alloc(4096 - 3001, i))
      expect(await h.read(4096, 10)).toBeNull()
    }
    for (const h of handles) h.close()
    await new Promise((resolve) => setImmediate(resolve))
    expect(open.size).toBe(0)
    expect(streams.size).toBe(0)
  })

  it('never closes the stream of a file in the middle of a read', async () => {
    const streams = new ReadStreams(1)
    const parked: string[] = []
    const busy = { busy: true, park: () => parked.push('busy') }
    const idle = { busy: false, park: () => parked.push('idle') }
    streams.use(busy)
    streams.use(idle)
    streams.use({ busy: false, park: () => parked.push('new') })
    expect(parked).toEqual(['idle'])
    expect(streams.size).toBe(2)
  })
})
