import { constants, PerformanceObserver } from 'node:perf_hooks'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { Digest } from '../src/blobs/digest.js'
import {
  bytesRead,
  CountedRead,
  FULL_EVERY_BYTES,
  PROMOTED_BYTES,
  RECLAIM_BYTES,
  useCollector,
  v8Collector,
} from '../src/blobs/read-buffers.js'

afterEach(() => useCollector(undefined))

/** The kinds of the collections V8 ran during `work` (their entries arrive asynchronously). */
async function gcKindsDuring(work: () => void): Promise<number[]> {
  const kinds: number[] = []
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) kinds.push((e as unknown as { detail: { kind: number } }).detail.kind)
  })
  observer.observe({ entryTypes: ['gc'] })
  try {
    work()
    await new Promise((r) => setTimeout(r, 50))
  } finally {
    observer.disconnect()
  }
  return kinds
}

/** `count` chunks of `size` bytes. */
function chunks(count: number, size: number): Readable {
  return Readable.from(Array.from({ length: count }, () => Buffer.alloc(size, 1)))
}

describe('freeing the buffers of bytes read', () => {
  it('asks for a scavenge once every RECLAIM_BYTES counted, across all streams together', () => {
    const calls: unknown[] = []
    useCollector(
      (o) => calls.push(o),
      () => 0,
    )
    bytesRead(RECLAIM_BYTES - 1)
    expect(calls).toHaveLength(0)
    bytesRead(1)
    expect(calls).toEqual([{ type: 'minor' }])
    for (let i = 0; i < 10; i++) bytesRead(RECLAIM_BYTES / 2)
    expect(calls).toHaveLength(6)
  })

  it('counts what passes through an upload’s digest and a counted read, and passes it on unchanged', async () => {
    let calls = 0
    useCollector(
      () => calls++,
      () => 0,
    )
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

  it('asks for a full collection once scavenges have promoted PROMOTED_BYTES', () => {
    const calls: string[] = []
    const majors = () => calls.filter((c) => c === 'major').length
    const read = (mib: number) => {
      for (let i = 0; i < mib / 4; i++) bytesRead(RECLAIM_BYTES)
    }
    let held = 100 << 20
    useCollector(
      (o) => {
        calls.push(o.type)
        // A full collection frees what the transfers promoted.
        if (o.type === 'major') held = 101 << 20
      },
      () => held,
    )
    read(4)
    expect(calls).toEqual(['minor'])
    held += PROMOTED_BYTES - 1
    read(FULL_EVERY_BYTES / 1048576)
    expect(majors()).toBe(0)
    held += 1
    read(4)
    expect(calls.slice(-2)).toEqual(['minor', 'major'])
    // Counted from what the full collection left.
    held = (101 << 20) + PROMOTED_BYTES - 1
    read(FULL_EVERY_BYTES / 1048576)
    expect(majors()).toBe(1)
    // V8's own full collection lowers the mark too.
    held = 90 << 20
    read(4)
    held = (90 << 20) + PROMOTED_BYTES
    read(4)
    expect(majors()).toBe(2)
    const between = FULL_EVERY_BYTES / RECLAIM_BYTES
    expect(calls.filter((c) => c === 'minor')).toHaveLength(1 + between + 1 + between + 1 + 1)
  })

  it('asks for at most one full collection per FULL_EVERY_BYTES read', () => {
    const calls: string[] = []
    // What is in flight grows and stays: no full collection frees it.
    let held = 0
    useCollector(
      (o) => calls.push(o.type),
      () => held,
    )
    for (let i = 0; i < (4 * FULL_EVERY_BYTES) / RECLAIM_BYTES; i++) {
      held += PROMOTED_BYTES
      bytesRead(RECLAIM_BYTES)
    }
    expect(calls.filter((c) => c === 'major')).toHaveLength(4)
    expect(calls.filter((c) => c === 'minor')).toHaveLength((4 * FULL_EVERY_BYTES) / RECLAIM_BYTES)
  })

  it('runs a real full collection with V8’s own collector', async () => {
    const gc = v8Collector()!
    const calls: string[] = []
    let held = 0
    const kinds = await gcKindsDuring(() => {
      useCollector(
        (o) => {
          calls.push(o.type)
          gc(o)
        },
        () => held,
      )
      bytesRead(RECLAIM_BYTES)
      held = PROMOTED_BYTES
      for (let i = 0; i < FULL_EVERY_BYTES / RECLAIM_BYTES; i++) bytesRead(RECLAIM_BYTES)
    })
    expect(calls.filter((c) => c === 'major')).toHaveLength(1)
    expect(kinds).toContain(constants.NODE_PERFORMANCE_GC_MAJOR)
  })

  it('runs a real minor collection with V8’s own collector', async () => {
    const kinds = await gcKindsDuring(() => {
      useCollector(undefined)
      for (let i = 0; i < 3; i++) bytesRead(RECLAIM_BYTES)
    })
    expect(kinds.filter((k) => k === constants.NODE_PERFORMANCE_GC_MINOR).length).toBeGreaterThanOrEqual(3)
  })
})
