import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import type { Database } from '../db/schema.js'
import { pruneDeliveryLog } from './delivery-log.js'

const DAY = 86_400_000

/**
 * Keeps the delivery log to WEBHOOK_LOG_RETENTION_DAYS: one pass at start and then every
 * `intervalMs`. Safe in several processes at once (deleting what another already deleted is a no-op).
 */
export class WebhookLogRetention {
  private timer: NodeJS.Timeout | null = null
  private last: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly db: Kysely<Database>,
    private readonly retentionDays: number,
    private readonly now: () => number,
    private readonly logger?: Logger,
  ) {}

  /** One pass; passes never overlap. Returns the number of rows removed. */
  runOnce(): Promise<number> {
    const run = this.last
      .catch(() => undefined)
      .then(() => pruneDeliveryLog(this.db, this.now() - this.retentionDays * DAY))
    this.last = run
    return run
  }

  start(intervalMs: number): void {
    if (this.timer) return
    const tick = () =>
      void this.runOnce().then(
        (n) => n > 0 && this.logger?.info({ removed: n }, 'webhook log records past retention removed'),
        (err) => this.logger?.error({ err }, 'webhook log retention failed'),
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
