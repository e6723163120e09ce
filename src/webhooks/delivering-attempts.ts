import type { Kysely } from 'kysely'
import type { Database } from '../db/schema.js'

/** The log record of the attempt that delivered a notification. */
export interface DeliveringAttempt {
  id: number
  attempt: number
}

/**
 * For each of these failed log records whose notification a later attempt has delivered, that
 * attempt's record, in one query. The retry endpoint refuses exactly these records and names
 * this one; the webhook-log results show it, so a client never offers a retry that is refused.
 * A delivered notification stops being sent, so it has one successful record; the first is
 * taken should there ever be more. Ids that are not failed records of the site are left out.
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
    .innerJoin('webhook_attempts as s', 's.notification_id', 'f.notification_id')
    .select(['f.id as failed_id', 's.id as id', 's.attempt as attempt'])
    .where('f.site_id', '=', siteId)
    .where('f.id', 'in', failedIds)
    .where('f.success', '=', 0)
    .where('s.success', '=', 1)
    .orderBy('s.id', 'desc')
    .execute()
  // Highest id first, so the first successful record of each notification is the one kept.
  for (const r of rows) out.set(Number(r.failed_id), { id: Number(r.id), attempt: Number(r.attempt) })
  return out
}
