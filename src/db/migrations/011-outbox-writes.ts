import { type Kysely, PostgresAdapter, sql } from 'kysely'

/**
 * PostgreSQL only: cheaper writes on the webhook outbox and its delivery log, the two tables every
 * delivery writes (docs/decisions.md, "The outbox on PostgreSQL").
 *
 * - Notifications leave 60% of each page free (fillfactor 40): a row of about 200 bytes grows by
 *   its lease, and the rows of a page are claimed together. A claim sets only the lease
 *   columns, which no index holds, so with room on the page it is a heap-only update: no new
 *   entry in any of the table's four indexes, and about a third of the WAL. Pages already
 *   written keep their layout until they are rewritten.
 * - The delivery log drops its two foreign keys. Each inserted record ran a trigger that looked
 *   up and key-share-locked its notification and its site: a fifth of the log write's time. Only
 *   the dispatcher writes the log, for notifications it holds the claim of, in the statement that
 *   updates them; retention deletes a notification's records before the notification itself.
 *
 * SQLite keeps its layout and keys: there a claim rewrites the row in place either way, and the
 * key checks are index probes on the same connection.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return
  await sql`alter table webhook_notifications set (fillfactor = 40)`.execute(db)
  await sql`alter table webhook_attempts drop constraint if exists webhook_attempts_notification_id_fkey`.execute(
    db,
  )
  await sql`alter table webhook_attempts drop constraint if exists webhook_attempts_site_id_fkey`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return
  await sql`alter table webhook_notifications reset (fillfactor)`.execute(db)
  await sql`alter table webhook_attempts add constraint webhook_attempts_notification_id_fkey
    foreign key (notification_id) references webhook_notifications (id) on delete cascade`.execute(db)
  await sql`alter table webhook_attempts add constraint webhook_attempts_site_id_fkey
    foreign key (site_id) references sites (id)`.execute(db)
}
