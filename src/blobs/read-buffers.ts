import { Transform, type TransformCallback } from 'node:stream'
import v8 from 'node:v8'
import vm from 'node:vm'

/**
 * Bytes that arrive from a socket (an upload's request body, an object read from S3) come in
 * fresh buffers of up to 64 KiB, held outside the JavaScript heap by small objects in its young
 * generation. A young generation that small objects barely fill is scavenged rarely, so V8 frees
 * those buffers only once their total passes its external-memory limit: a fast transfer kept
 * 60 to 80 MiB of buffers already read and done with (docs/performance-history.md, "Memory:
 * buffers read from sockets"). Streams that move bulk bytes count them here, once per byte (a
 * file read for checksums counts too: its buffers are just as fresh); every RECLAIM_BYTES this
 * process asks V8 for a scavenge, which frees them at once. A scavenge of Wharf's young
 * generation takes a fraction of a millisecond, about what V8 spends anyway, and happens at most
 * 256 times per GiB moved, across all transfers together.
 */
export const RECLAIM_BYTES = 4 << 20

/**
 * A scavenge frees the buffers of what has been read, but promotes what is alive at that moment:
 * the objects of the requests in flight (an S3 part's request lives for hundreds of scavenges)
 * and the buffers still queued in their streams. That garbage waits for a full collection, and
 * V8 starts one only when the old generation has doubled (`--heap-growing-percent=100`, which
 * SFTP and webhooks need): 25–45 MiB more resident during a 1 GiB transfer through the S3 store.
 * So, after a scavenge, once the heap and the memory its objects hold have grown by
 * PROMOTED_BYTES since the last full collection, Wharf asks V8 for one (docs/decisions.md,
 * "Garbage promoted by transfers is collected as a transfer goes"): 20–36 ms each on a 2-vCPU
 * machine, four to six for a 1 GiB upload through S3 proxy mode, its checksums and its download.
 * What many transfers at once hold in flight counts as growth too, and no collection frees it:
 * at most one is asked for per FULL_EVERY_BYTES read, so such pauses never come more often than
 * once per 256 MiB.
 */
export const PROMOTED_BYTES = 12 << 20
export const FULL_EVERY_BYTES = 256 << 20

type Collector = (options: { type: 'minor' | 'major' }) => void
/** What V8's heap holds now: the heap in use and the memory outside it that its objects hold. */
type HeapHeld = () => number

const heldByV8: HeapHeld = () => {
  const h = v8.getHeapStatistics()
  return h.used_heap_size + h.external_memory
}

let counted = 0
// undefined: not looked up yet; null: none to be had.
let collector: Collector | null | undefined
let heapHeld = heldByV8
// What the heap held after the last full collection, or less if it has held less since (V8's own
// full collections); undefined until the first scavenge asked for.
let heldAfterFull: number | undefined
let scavengesSinceFull = 0

/**
 * V8's collector: `globalThis.gc` where Node was started with --expose-gc, else exposed now (null
 * where neither works). Tests wrap it to watch what bytesRead asks for.
 */
export function v8Collector(): Collector | null {
  const exposed = (globalThis as { gc?: Collector }).gc
  if (typeof exposed === 'function') return exposed
  try {
    v8.setFlagsFromString('--expose-gc')
    const gc = vm.runInNewContext('gc') as unknown
    return typeof gc === 'function' ? (gc as Collector) : null
  } catch {
    return null
  }
}

/**
 * Counts bytes read from a socket; every RECLAIM_BYTES of them, a scavenge frees their buffers,
 * and a full collection the garbage the scavenges promoted once it has reached PROMOTED_BYTES.
 */
export function bytesRead(n: number): void {
  counted += n
  if (counted < RECLAIM_BYTES) return
  counted %= RECLAIM_BYTES
  collectYoung()
  collectPromoted()
}

function collectPromoted(): void {
  if (!collector) return
  scavengesSinceFull++
  const held = heapHeld()
  if (heldAfterFull === undefined || held < heldAfterFull) {
    heldAfterFull = held
    return
  }
  if (held - heldAfterFull < PROMOTED_BYTES || scavengesSinceFull * RECLAIM_BYTES < FULL_EVERY_BYTES) return
  collector({ type: 'major' })
  heldAfterFull = heapHeld()
  scavengesSinceFull = 0
}

/**
 * A scavenge now: what frees buffers outside the heap that only small young objects hold (socket
 * reads, an export's blocks). V8's collector is looked up on the first call, not at start-up.
 */
export function collectYoung(): void {
  if (collector === undefined) collector = v8Collector()
  collector?.({ type: 'minor' })
}

/**
 * Tests: the collector bytesRead calls and what it reads of the heap (undefined: V8's own again).
 */
export function useCollector(c: Collector | undefined, held: HeapHeld = heldByV8): void {
  collector = c
  heapHeld = held
  heldAfterFull = undefined
  scavengesSinceFull = 0
  counted = 0
}

/** A pass-through that counts what flows through it with bytesRead (a download's body, say). */
export class CountedRead extends Transform {
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    bytesRead(chunk.length)
    done(null, chunk)
  }
}
