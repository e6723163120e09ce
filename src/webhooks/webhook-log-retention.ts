import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import type { Database } from '../db/schema.js'
import { RetentionJob } from '../jobs/retention-job.js'
import { pruneDeliveryLog } from './delivery-log.js'
import { pruneSequences } from './webhook-ordering.js'

/**
 * Keeps the delivery log to WEBHOOK_LOG_RETENTION_DAYS, and the sequence numbers of paths that
 * had no notification for as long (their next one starts at 1 again).
 */
export class WebhookLogRetention extends RetentionJob {
  constructor(db: Kysely<Database>, retentionDays: number, now: () => number, logger?: Logger) {
    super(
      'webhook log records',
      async (cutoff) => (await pruneDeliveryLog(db, cutoff)) + (await pruneSequences(db, cutoff)),
      retentionDays,
      now,
      logger,
    )
  }
}
