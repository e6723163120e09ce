import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import type { Database } from '../db/schema.js'
import { RetentionJob } from '../jobs/retention-job.js'
import { pruneDeliveryLog } from './delivery-log.js'

/** Keeps the delivery log to WEBHOOK_LOG_RETENTION_DAYS. */
export class WebhookLogRetention extends RetentionJob {
  constructor(db: Kysely<Database>, retentionDays: number, now: () => number, logger?: Logger) {
    super('webhook log records', (cutoff) => pruneDeliveryLog(db, cutoff), retentionDays, now, logger)
  }
}
