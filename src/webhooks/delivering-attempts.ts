import type { Kysely } from 'kysely'
import type { Database } from '../db/schema.js'

/** The log record of the attempt that delivered a notification. */
export interface DeliveringAttempt {
  id: number
  attempt: number
}

/**
 * For each of these failed log records whose notification a later attempt has delivered, that
 * attempt's record, in one query. The retry endpoint refuses exactly these records (their
 * notification is `delivered`) and names this one; the webhook-log results show it, so a client
 * never offers a retry that is refused. Delivery ends a notification, so its delivering attempt
 * is its last: `attempts` points at that record through the (notification, attempt) index, one
 * look-up per record however many attempts the notification had. Ids that are not failed records
 * of the site are left out.
 */
export async function deliveringAttempts(
  db: Kysely<Database>,
  siteId: number,
  failedIds: readonly number[],
): Promise<Map<number, DeliveringAttempt>> {
  const out = new Map<number, DeliveringAttempt>()
  if (failedIds.length === 0) return out
  const rows = await db
    .selectFrom('webhook_attempts as f')
    .innerJoin('webhook_notifications as n', 'n.id', 'f.notification_id')
    .innerJoin('webhook_attempts as s', (j) =>
      j.onRef('s.notification_id', '=', 'n.id').onRef('s.attempt', '=', 'n.attempts'),
    )
    .select(['f.id as failed_id', 's.id as id', 's.attempt as attempt'])
    // The site is checked on the notification: on the log record, PostgreSQL may combine the
    // site index with the notification index and read every record of the site per notification.
    .where('n.site_id', '=', siteId)
    .where('f.id', 'in', failedIds)
    .where('f.success', '=', 0)
    .where('n.state', '=', 'delivered')
    .where('s.success', '=', 1)
    .orderBy('s.id', 'desc')
    .execute()
  // Highest id first: later rows overwrite, so should an attempt ever be logged twice, the
  // first record of it is the one named.
  for (const r of rows) out.set(Number(r.failed_id), { id: Number(r.id), attempt: Number(r.attempt) })
  return out
}
