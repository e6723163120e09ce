import type { Logger } from 'pino'
import type { JobLease } from './job-lease.js'

const DAY = 86_400_000

/**
 * Deletes records older than a number of days: one pass at start, then every `intervalMs`. Passes
 * never overlap; `prune` must be safe in several processes at once (deleting what another process
 * already deleted is a no-op). With a lease (`takeTurns`), processes sharing the database take
 * turns: a pass that finds another process pruning does nothing.
 */
export class RetentionJob {
  private timer: NodeJS.Timeout | null = null
  private last: Promise<unknown> = Promise.resolve()
  private lease: JobLease | null = null

  constructor(
    /** What is removed, for the log (`exports`, `webhook log records`). */
    private readonly what: string,
    /** Removes what was created before `cutoff` (epoch ms); returns how many it removed. */
    private readonly prune: (cutoff: number) => Promise<number>,
    private readonly retentionDays: number,
    private readonly now: () => number,
    private readonly logger?: Logger,
  ) {}

  /** Prunes only while holding `lease`, so that several processes do not do the same pass. */
  takeTurns(lease: JobLease): this {
    this.lease = lease
    return this
  }

  /** One pass; returns the number of records removed (0 when another process was pruning). */
  runOnce(): Promise<number> {
    const pass = () => this.prune(this.now() - this.retentionDays * DAY)
    const run = this.last
      .catch(() => undefined)
      .then(async () => (this.lease ? ((await this.lease.hold(pass)) ?? 0) : pass()))
    this.last = run
    return run
  }

  start(intervalMs: number): void {
    if (this.timer) return
    const tick = () =>
      void this.runOnce().then(
        (n) => n > 0 && this.logger?.info({ removed: n }, `${this.what} past retention removed`),
        (err) => this.logger?.error({ err }, `retention of ${this.what} failed`),
      )
    tick()
    this.timer = setInterval(tick, intervalMs)
    this.timer.unref()
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.last.catch(() => undefined)
  }
}
