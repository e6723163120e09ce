import fsp from 'node:fs/promises'

/**
 * Starts writing staged parts to disk while the rest of their upload is still arriving, one part
 * at a time and without anyone waiting for it: otherwise the kernel keeps a whole upload in the
 * page cache and `assemble` would wait for all of it to reach the disk at once. This is only a
 * head start: `assemble` still flushes every part itself before it publishes the blob, and a
 * failure here (a part replaced or discarded meanwhile) only leaves it more to do.
 */
export class Writeback {
  private readonly queue: { ref: string; file: string }[] = []
  private running = false

  add(ref: string, file: string): void {
    this.queue.push({ ref, file })
    if (!this.running) void this.run()
  }

  /** The upload is ending or gone: its parts are flushed by assemble, or not needed. */
  forget(ref: string): void {
    for (let i = this.queue.length - 1; i >= 0; i--) if (this.queue[i]!.ref === ref) this.queue.splice(i, 1)
  }

  private async run(): Promise<void> {
    this.running = true
    try {
      for (let next = this.queue.shift(); next; next = this.queue.shift()) {
        const handle = await fsp.open(next.file, 'r').catch(() => null)
        if (!handle) continue
        await handle.datasync().catch(() => undefined)
        await handle.close().catch(() => undefined)
      }
    } finally {
      this.running = false
    }
  }
}
