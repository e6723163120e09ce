import type { EventEmitter } from 'node:events'
import type { Logger } from 'pino'
import { JobLoop } from './job-loop.js'

export interface LeasedWorkerSettings {
  /** Jobs running at once in this process. */
  concurrency: number
  /** How long a claim lasts unless renewed; renewed every third of it while the job runs. */
  leaseMs: number
  /** Longest wait between looks for work (jobs of other processes, claims that ran out). */
  pollMs: number
  /** SQLite: one process owns the file, so claims left by a crash are void at start. */
  releaseClaimsOnStart?: boolean | undefined
  logger?: Logger | undefined
}

/** The worker is stopping: a job's claim is handed back so the next process starts it at once. */
export class Stopping extends Error {}

/**
 * Runs claimed jobs (export builds, checksum reads): up to `concurrency` at once in this process,
 * each with its own AbortController and its lease renewed every third of its length while it
 * runs, woken by an event of this process and by polling. Stopping aborts the running jobs with
 * `Stopping` and waits for them. Subclasses say how to claim, renew, run and log a job.
 */
export abstract class LeasedWorker<Row extends { id: number }> extends JobLoop {
  private readonly running = new Map<number, { done: Promise<void>; abort: AbortController }>()

  constructor(
    private readonly settings: LeasedWorkerSettings,
    /** The event of this process that says new work exists. */
    private readonly wake: { emitter: EventEmitter; event: string },
    /** The worker's name in the log ("export worker"). */
    what: string,
  ) {
    super(settings.pollMs, settings.logger, `${what} could not claim work`)
  }

  /** Claims up to `free` due jobs. */
  protected abstract claim(free: number): Promise<Row[]>
  /** Hands back every claim left in the database (SQLite, at start). */
  protected abstract releaseLeftOver(): Promise<void>
  /** Runs one job; its signal aborts when the worker stops (or the subclass gives up the claim). */
  protected abstract run(row: Row, signal: AbortSignal): Promise<void>
  /** Renews a running job's lease; may abort it (the claim was lost). */
  protected abstract renew(row: Row, abort: AbortController): Promise<void>
  /** Logs a job that failed in a way `run` did not record. */
  protected abstract failed(err: unknown, row: Row): void

  async start(): Promise<void> {
    if (!this.stopped) return
    this.stopped = false
    if (this.settings.releaseClaimsOnStart) await this.releaseLeftOver()
    this.wake.emitter.on(this.wake.event, this.kick)
    this.kick()
  }

  /** Stops claiming; jobs in progress stop at their next step and hand their claim back. */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.wake.emitter.off(this.wake.event, this.kick)
    await this.halt()
    for (const r of this.running.values()) r.abort.abort(new Stopping('the server is stopping'))
    await Promise.allSettled([...this.running.values()].map((r) => r.done))
  }

  /** Resolves once no job is running in this process (tests). */
  async idle(): Promise<void> {
    while (this.running.size > 0 || this.looking) {
      await Promise.allSettled([this.looking, ...[...this.running.values()].map((r) => r.done)])
    }
  }

  protected override async look(): Promise<boolean> {
    const free = this.settings.concurrency - this.running.size
    if (free <= 0) return false
    const rows = await this.claim(free)
    for (const row of rows) this.launch(row)
    return rows.length < free
  }

  private launch(row: Row): void {
    const abort = new AbortController()
    const renew = setInterval(() => void this.renew(row, abort), Math.max(50, this.settings.leaseMs / 3))
    renew.unref()
    const done = this.run(row, abort.signal)
      .catch((err) => this.failed(err, row))
      .finally(() => {
        clearInterval(renew)
        this.running.delete(row.id)
        // A slot came free: there may be more to do.
        this.kick()
      })
    this.running.set(row.id, { done, abort })
  }
}
