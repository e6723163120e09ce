import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import { queueBlobDeletions } from '../blobs/blob-garbage.js'
import type { Database } from '../db/schema.js'
import { RetentionJob } from '../jobs/retention-job.js'

/**
 * Deletes exports EXPORT_RETENTION_DAYS after their creation, whatever their state, and queues
 * their CSV files for the janitor in the same transaction (a file is never deleted before its
 * export, nor forgotten after it). One pass at start, then every `intervalMs`; safe in several
 * processes at once. A build still running on a deleted export finds its claim gone and throws
 * its file away.
 */
export class ExportRetention extends RetentionJob {
  constructor(
    private readonly db: Kysely<Database>,
    retentionDays: number,
    now: () => number,
    logger?: Logger,
  ) {
    super('exports', (cutoff) => this.pruneExports(cutoff, now()), retentionDays, now, logger)
  }

  private async pruneExports(cutoff: number, now: number, batch = 500): Promise<number> {
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
        await queueBlobDeletions(trx, keys, now)
        return gone.length
      })
      removed += n
      if (n < batch) return removed
    }
  }
}
