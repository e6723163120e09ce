import type { Kysely } from 'kysely'

/**
 * Per-path order for what an endpoint kept, or a recovery queued again: `order_attempts_from` is
 * the number of attempts a notification had when an enable or a recovery put it back in the
 * outbox. The order hold (`WEBHOOK_ORDER_HOLD_ATTEMPTS`) counts attempts from there, so events
 * that had failed past the hold before they were kept are sent in their order again, whatever
 * the endpoint's concurrency. 0 for every other notification: the hold counts all its attempts.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('webhook_notifications')
    .addColumn('order_attempts_from', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_notifications').dropColumn('order_attempts_from').execute()
}
