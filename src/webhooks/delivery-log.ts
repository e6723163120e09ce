import type { Kysely } from 'kysely'
import type { Database, NotificationState } from '../db/schema.js'
import type { RetryPolicy } from './retry-policy.js'
import type { WebhookOutcome } from './webhook-sender.js'

export interface AttemptRecord {
  attempt: number
  sentAt: number
  url: string
  headers: Record<string, string>
  body: string
  outcome: WebhookOutcome
  now: number
}

export interface DeliveryLog {
  /** Id of the log record (what the retry endpoint takes). */
  id: number
  attempt: number
  state: NotificationState
  outcome: WebhookOutcome
}

interface ClaimedNotification {
  id: number
  site_id: number
  user_id: number | null
  operation: string
  path: string
  folder: string
  max_attempts: number
}

/**
 * Records one attempt and the notification's next state in one transaction: delivered, failed
 * for good, or pending again after the retry delay. The update applies only while this worker
 * still holds the claim; if its lease ran out and another worker took over, that one decides.
 */
export async function logAttempt(
  db: Kysely<Database>,
  policy: RetryPolicy,
  owner: string,
  n: ClaimedNotification,
  r: AttemptRecord,
): Promise<DeliveryLog> {
  const { outcome } = r
  let state: NotificationState = 'delivered'
  let next: number | null = null
  if (!outcome.success) {
    if (r.attempt >= policy.maxAttempts(n.max_attempts)) state = 'failed'
    else {
      state = 'pending'
      const retryAfter = outcome.status === 429 || outcome.status === 503 ? outcome.retryAfterSeconds : null
      next = r.now + policy.delayMs(r.attempt, retryAfter)
    }
  }
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .insertInto('webhook_attempts')
      .values({
        site_id: n.site_id,
        notification_id: n.id,
        attempt: r.attempt,
        created_at: r.sentAt,
        user_id: n.user_id,
        operation: n.operation,
        status: outcome.status,
        message: outcome.message,
        success: outcome.success ? 1 : 0,
        request_headers: JSON.stringify(r.headers),
        request_method: 'POST',
        request_url: r.url,
        request_body: r.body,
        path: n.path,
        folder: n.folder,
        response_size: outcome.responseSize,
        response_body: outcome.responseBody,
        duration_ms: Math.round(outcome.durationMs),
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    await trx
      .updateTable('webhook_notifications')
      .set({
        attempts: r.attempt,
        state,
        next_attempt_at: next,
        lease_owner: null,
        lease_until: null,
        updated_at: r.now,
      })
      .where('id', '=', n.id)
      .where('lease_owner', '=', owner)
      .execute()
    return { id: row.id, attempt: r.attempt, state, outcome }
  })
}

/**
 * Deletes log records older than the retention, and finished notifications not touched since,
 * in batches so no statement holds the database for long. Returns how many rows went.
 */
export async function pruneDeliveryLog(db: Kysely<Database>, cutoff: number, batch = 5000): Promise<number> {
  let removed = 0
  for (;;) {
    const old = db.selectFrom('webhook_attempts').select('id').where('created_at', '<', cutoff).limit(batch)
    const res = await db.deleteFrom('webhook_attempts').where('id', 'in', old).executeTakeFirst()
    const n = Number(res.numDeletedRows)
    removed += n
    if (n < batch) break
  }
  for (;;) {
    const old = db
      .selectFrom('webhook_notifications')
      .select('id')
      .where('state', 'in', ['delivered', 'failed', 'dropped'])
      .where('updated_at', '<', cutoff)
      .limit(batch)
    const res = await db.deleteFrom('webhook_notifications').where('id', 'in', old).executeTakeFirst()
    const n = Number(res.numDeletedRows)
    removed += n
    if (n < batch) break
  }
  return removed
}
