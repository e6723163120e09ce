import { Transform, type TransformCallback } from 'node:stream'
import v8 from 'node:v8'
import vm from 'node:vm'

/**
 * Bytes that arrive from a socket (an upload's request body, an object read from S3) come in
 * fresh buffers of up to 64 KiB, held outside the JavaScript heap by small objects in its young
 * generation. A young generation that small objects barely fill is scavenged rarely, so V8 frees
 * those buffers only once their total passes its external-memory limit: a fast transfer kept
 * 60 to 80 MiB of buffers already read and done with (docs/performance.md, "Memory: buffers read
 * from sockets"). Streams that move bulk bytes count them here, once per byte (a file read
 * for checksums counts too: its buffers are just as fresh); every RECLAIM_BYTES this
 * process asks V8 for a scavenge, which frees them at once. A scavenge of Wharf's young
 * generation takes a fraction of a millisecond, about what V8 spends anyway, and happens at most
 * 256 times per GiB moved, across all transfers together.
 */
export const RECLAIM_BYTES = 4 << 20

type Collector = (options: { type: 'minor' }) => void

let counted = 0
// undefined: not looked up yet; null: none to be had.
let collector: Collector | null | undefined

/** V8's collector: `globalThis.gc` where Node was started with --expose-gc, else exposed now. */
function lookUpCollector(): Collector | null {
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

/** Counts bytes read from a socket; every RECLAIM_BYTES of them, a scavenge frees their buffers. */
export function bytesRead(n: number): void {
  counted += n
  if (counted < RECLAIM_BYTES) return
  counted %= RECLAIM_BYTES
  collectYoung()
}

/**
 * A scavenge now: what frees buffers outside the heap that only small young objects hold (socket
 * reads, an export's blocks). V8's collector is looked up on the first call, not at start-up.
 */
export function collectYoung(): void {
  if (collector === undefined) collector = lookUpCollector()
  collector?.({ type: 'minor' })
}

/** Tests: the collector bytesRead calls (undefined: V8's own again). */
export function useCollector(c: Collector | undefined): void {
  collector = c
  counted = 0
}

/** A pass-through that counts what flows through it with bytesRead (a download's body, say). */
export class CountedRead extends Transform {
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    bytesRead(chunk.length)
    done(null, chunk)
  }
}
