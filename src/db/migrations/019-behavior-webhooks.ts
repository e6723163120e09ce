import type { Kysely } from 'kysely'

/**
 * Webhook behaviors deliver through the site's outbox: a notification names the behavior and the
 * one URL of it that it goes to (both null for the site's own listener), and each log record
 * names the behavior too, so the log filters by it. No foreign key: a behavior deleted keeps its
 * log, and its notifications still pending are dropped when their turn comes.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_notifications').addColumn('behavior_id', 'bigint').execute()
  await db.schema.alterTable('webhook_notifications').addColumn('url', 'text').execute()
  await db.schema.alterTable('webhook_attempts').addColumn('behavior_id', 'bigint').execute()
  await db.schema
    .createIndex('webhook_attempts_site_behavior')
    .on('webhook_attempts')
    .columns(['site_id', 'behavior_id', 'id'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('webhook_attempts_site_behavior').execute()
  await db.schema.alterTable('webhook_attempts').dropColumn('behavior_id').execute()
  await db.schema.alterTable('webhook_notifications').dropColumn('url').execute()
  await db.schema.alterTable('webhook_notifications').dropColumn('behavior_id').execute()
}
