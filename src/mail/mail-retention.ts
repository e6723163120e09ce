import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import type { Database } from '../db/schema.js'
import { RetentionJob } from '../jobs/retention-job.js'

/**
 * Keeps the mail outbox to MAIL_RETENTION_DAYS: messages sent or given up that long after they
 * were queued are deleted. Queued ones stay whatever their age (the worker still owes them an
 * attempt), and so do the last hour's (they count against the share limit).
 */
export class MailRetention extends RetentionJob {
  constructor(db: Kysely<Database>, retentionDays: number, now: () => number, logger?: Logger) {
    super(
      'sent mail',
      async (cutoff) => {
        const result = await db
          .deleteFrom('mail_outbox')
          .where('state', 'in', ['sent', 'failed'])
          .where('created_at', '<', cutoff)
          .executeTakeFirst()
        return Number(result.numDeletedRows)
      },
      retentionDays,
      now,
      logger,
    )
  }
}
