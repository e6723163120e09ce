import { type Kysely, sql } from 'kysely'

/**
 * Per-path ordering of webhook deliveries (docs/decisions.md, "Webhook ordering").
 *
 * A notification names its ordering key: the endpoint (the site's listener, or one URL of a
 * webhook behavior) and the path, lower case; and its sequence number among that key's
 * notifications (`Webhook-Sequence`). Both are null for tests and for notifications written
 * before this migration, which are sent unordered. `webhook_sequences` holds each key's last
 * number, raised in the transaction of the Action that writes the notification.
 *
 * The claim holds a notification back while an older one of its key is still pending: the
 * partial index serves that look-up (pending rows only, by key and sequence).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_notifications').addColumn('order_key', 'text').execute()
  await db.schema.alterTable('webhook_notifications').addColumn('sequence', 'bigint').execute()
  await sql`create index webhook_notifications_order on webhook_notifications (order_key, sequence) where state = 'pending'`.execute(
    db,
  )
  await db.schema
    .createTable('webhook_sequences')
    .addColumn('order_key', 'text', (c) => c.primaryKey())
    .addColumn('sequence', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('webhook_sequences').execute()
  await sql`drop index if exists webhook_notifications_order`.execute(db)
  await db.schema.alterTable('webhook_notifications').dropColumn('sequence').execute()
  await db.schema.alterTable('webhook_notifications').dropColumn('order_key').execute()
}
