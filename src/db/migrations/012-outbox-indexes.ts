import { type Kysely, PostgresAdapter, sql } from 'kysely'

/**
 * PostgreSQL only: fewer index entries per delivered notification (docs/decisions.md, "The outbox
 * on PostgreSQL").
 *
 * A delivery's last write sets the notification's state, attempts and due time, which the
 * partial indexes of the claim hold, so it cannot be a heap-only update: the new row version
 * gets an entry in every other index of the table. Two of them bought nothing for it:
 *
 * - `webhook_notifications_created` (retention's look-up by age) becomes a BRIN index: rows are
 *   inserted in time order, so block ranges summarise `created_at` well, and a summary needs no
 *   new entry for a row whose time falls in its block's range. Retention still reads only the
 *   old blocks.
 * - The unique constraint on `message_id` goes. Nothing looks a notification up by it, and the
 *   id is 128 random bits made once per notification (webhook-outbox.ts, `newMessageId`); each
 *   entry was a text comparison down a B-tree on every enqueue and every delivery.
 *
 * SQLite keeps both: an update there touches only the indexes of the columns it changes.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return
  await sql`drop index if exists webhook_notifications_created`.execute(db)
  await sql`create index webhook_notifications_created on webhook_notifications using brin (created_at)`.execute(
    db,
  )
  await sql`alter table webhook_notifications drop constraint if exists webhook_notifications_message_id_key`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return
  await sql`drop index if exists webhook_notifications_created`.execute(db)
  await sql`create index webhook_notifications_created on webhook_notifications (created_at)`.execute(db)
  await sql`alter table webhook_notifications add constraint webhook_notifications_message_id_key unique (message_id)`.execute(
    db,
  )
}
