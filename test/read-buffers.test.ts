import { constants, PerformanceObserver } from 'node:perf_hooks'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { Digest } from '../src/blobs/digest.js'
import { bytesRead, CountedRead, RECLAIM_BYTES, useCollector } from '../src/blobs/read-buffers.js'

afterEach(() => useCollector(undefined))

/** `count` chunks of `size` bytes. */
function chunks(count: number, size: number): Readable {
  return Readable.from(Array.from({ length: count }, () => Buffer.alloc(size, 1)))
}

describe('freeing the buffers of bytes read', () => {
  it('asks for a scavenge once every RECLAIM_BYTES counted, across all streams together', () => {
    const calls: unknown[] = []
    useCollector((o) => calls.push(o))
    bytesRead(RECLAIM_BYTES - 1)
    expect(calls).toHaveLength(0)
    bytesRead(1)
    expect(calls).toEqual([{ type: 'minor' }])
    for (let i = 0; i < 10; i++) bytesRead(RECLAIM_BYTES / 2)
    expect(calls).toHaveLength(6)
  })

  it('counts what passes through an upload’s digest and a counted read, and passes it on unchanged', async () => {
    let calls = 0
    useCollector(() => calls++)
    const digest = new Digest()
    let out = 0
    await pipeline(chunks(64, 64 * 1024), digest, new CountedRead(), async (source) => {
      for await (const c of source) out += (c as Buffer).length
    })
    expect(out).toBe(4 << 20)
    expect(digest.size).toBe(4 << 20)
    // 4 MiB through the digest and 4 MiB more through the counted read.
    expect(calls).toBe(2)
  })

  it('runs a real minor collection with V8’s own collector', async () => {
    const kinds: number[] = []
    const observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries())
        kinds.push((e as unknown as { detail: { kind: number } }).detail.kind)
    })
    observer.observe({ entryTypes: ['gc'] })
    try {
      useCollector(undefined)
      for (let i = 0; i < 3; i++) bytesRead(RECLAIM_BYTES)
      // GC entries are delivered asynchronously.
      await new Promise((r) => setTimeout(r, 50))
    } finally {
      observer.disconnect()
    }
    expect(kinds.filter((k) => k === constants.NODE_PERFORMANCE_GC_MINOR).length).toBeGreaterThanOrEqual(3)
  })
})
