import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import type { Database } from '../db/schema.js'

const DAY = 86_400_000

/**
 * Deletes exports EXPORT_RETENTION_DAYS after their creation, whatever their state, and queues
 * their CSV files for the janitor in the same transaction (a file is never deleted before its
 * export, nor forgotten after it). One pass at start, then every `intervalMs`; safe in several
 * processes at once. A build still running on a deleted export finds its claim gone and throws
 * its file away.
 */
export class ExportRetention {
  private timer: NodeJS.Timeout | null = null
  private last: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly db: Kysely<Database>,
    private readonly retentionDays: number,
    private readonly now: () => number,
    private readonly logger?: Logger,
  ) {}

  /** One pass; passes never overlap. Returns the number of exports removed. */
  runOnce(): Promise<number> {
    const run = this.last.catch(() => undefined).then(() => this.prune(this.now() - this.retentionDays * DAY))
    this.last = run
    return run
  }

  start(intervalMs: number): void {
    if (this.timer) return
    const tick = () =>
      void this.runOnce().then(
        (n) => n > 0 && this.logger?.info({ removed: n }, 'exports past retention removed'),
        (err) => this.logger?.error({ err }, 'export retention failed'),
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

  private async prune(cutoff: number, batch = 500): Promise<number> {
    let removed = 0
    for (;;) {
      const n = await this.db.transaction().execute(async (trx) => {
        const old = await trx
          .selectFrom('exports')
          .select('id')
          .where('created_at', '<', cutoff)
          .orderBy('id')
          .limit(batch)
          .execute()
        if (old.length === 0) return 0
        const gone = await trx
          .deleteFrom('exports')
          .where(
            'id',
            'in',
            old.map((r) => r.id),
          )
          .returning(['blob_key'])
          .execute()
        const keys = gone.map((g) => g.blob_key).filter((k): k is string => k !== null)
        if (keys.length > 0) {
          const now = this.now()
          await trx
            .insertInto('blob_garbage')
            .values(keys.map((blob_key) => ({ blob_key, created_at: now })))
            .execute()
        }
        return gone.length
      })
      removed += n
      if (n < batch) return removed
    }
  }
}
