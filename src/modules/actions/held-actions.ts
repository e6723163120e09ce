import type { Logger } from 'pino'
import { isStorageFull } from '../../db/errors.js'

/** At most this many writes are held; beyond it they are only counted (and the count logged). */
const MAX_HELD = 10_000
const RETRY_MS = 30_000

/**
 * Writes that may wait when storage is full: a download's `read` Action must not cost the user
 * the file they asked for. A write that fails with SQLITE_FULL or disk_full is held in memory, in
 * order, with its original time, and written once space returns (on the next such write, or
 * every 30 s). What is lost: held writes vanish if the process stops before then, and beyond
 * MAX_HELD a write is only counted in the log. Any other failure is thrown as before.
 */
export class HeldActions {
  private held: (() => Promise<unknown>)[] = []
  private dropped = 0
  private timer: NodeJS.Timeout | null = null
  private flushing: Promise<void> | null = null

  constructor(private readonly logger?: Logger) {}

  /** How many writes wait for space. */
  get size(): number {
    return this.held.length
  }

  /** Runs `write` after any held ones; holds it instead when storage is full. */
  async write(write: () => Promise<unknown>): Promise<void> {
    if (this.held.length > 0) await this.flush()
    if (this.held.length > 0) return this.hold(write)
    try {
      await write()
    } catch (err) {
      if (!isStorageFull(err)) throw err
      this.logger?.error(
        { err, code: (err as { code?: unknown }).code },
        'storage is full: download Actions are held in memory until they can be written',
      )
      this.hold(write)
    }
  }

  /** Writes the held ones in order, stopping at the first that still finds storage full. */
  flush(): Promise<void> {
    this.flushing ??= this.drain().finally(() => {
      this.flushing = null
    })
    return this.flushing
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }

  private hold(write: () => Promise<unknown>): void {
    if (this.held.length >= MAX_HELD) this.dropped++
    else this.held.push(write)
    if (!this.timer) {
      this.timer = setInterval(() => void this.flush().catch(() => undefined), RETRY_MS)
      this.timer.unref()
    }
  }

  private async drain(): Promise<void> {
    let written = 0
    while (this.held.length > 0) {
      try {
        await this.held[0]!()
      } catch (err) {
        if (isStorageFull(err)) return
        // Not a matter of space: this one would never be written; the rest still may.
        this.logger?.error({ err }, 'a held download Action could not be written')
      }
      this.held.shift()
      written++
    }
    this.stop()
    if (written > 0 || this.dropped > 0) {
      this.logger?.warn(
        { written, lost: this.dropped },
        'storage has room again: held download Actions written (lost: beyond the held limit)',
      )
    }
    this.dropped = 0
  }
}
