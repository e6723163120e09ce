import type { Logger } from 'pino'
import { metrics } from '../metrics/metrics.js'

/**
 * When a worker looks for work: at once when kicked (work was created, a slot came free), again
 * straight after a look during which it was kicked, and at the latest after a wait the worker
 * chooses (the poll, which also finds claims that other processes left to run out). Looks never
 * overlap.
 */
export abstract class JobLoop {
  protected stopped = true
  private pumping: Promise<void> | null = null
  private again = false
  private timer: NodeJS.Timeout | null = null
  private lastLookFailed = false

  constructor(
    /** Longest wait between looks when nothing kicks the worker. */
    protected readonly pollMs: number,
    protected readonly logger: Logger | undefined,
    /** What the log says when a look fails. */
    private readonly lookFailed: string,
  ) {}

  /**
   * Claims what is due and starts it; true when it found less than it had room for (the due rows
   * ran out), so that the next due time matters.
   */
  protected abstract look(): Promise<boolean>

  /** Milliseconds until the next look, once the due rows ran out. */
  protected nextLookIn(): Promise<number> {
    return Promise.resolve(this.pollMs)
  }

  /** Look for work now. */
  readonly kick = (): void => {
    if (this.stopped) return
    if (this.pumping) {
      this.again = true
      return
    }
    this.pumping = this.pump().finally(() => {
      this.pumping = null
      // A kick that came after the last claim (while the next due time was read, or as the
      // pump ended) was only noted: without this look it waited for the poll.
      if (this.again) this.kick()
    })
  }

  /** Lets kicks through and looks at once. */
  protected resume(): void {
    this.stopped = false
    this.kick()
  }

  /** Stops looking; resolves once a look in progress has ended. */
  protected async halt(beforeWaiting?: () => Promise<void>): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    await beforeWaiting?.()
    await this.pumping
  }

  /**
   * Whether the worker runs, and whether its last look for work failed (readiness: an outbox
   * nobody works is a server that is not ready).
   */
  get health(): { running: boolean; lastLookFailed: boolean } {
    return { running: !this.stopped, lastLookFailed: this.lastLookFailed }
  }

  /** The look in progress, if any (tests wait for it). */
  protected get looking(): Promise<void> | null {
    return this.pumping
  }

  private async pump(): Promise<void> {
    let wait = this.pollMs
    try {
      let drained = false
      do {
        this.again = false
        drained = await this.look()
      } while (this.again && !this.stopped)
      if (drained) wait = await this.nextLookIn()
      this.lastLookFailed = false
      metrics.jobLooks.inc({ worker: this.constructor.name, result: 'ok' })
    } catch (err) {
      this.lastLookFailed = true
      metrics.jobLooks.inc({ worker: this.constructor.name, result: 'failed' })
      this.logger?.error({ err }, this.lookFailed)
    }
    if (!this.stopped) {
      if (this.timer) clearTimeout(this.timer)
      this.timer = setTimeout(this.kick, wait)
      this.timer.unref()
    }
  }
}
