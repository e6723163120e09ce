import { type Kysely, PostgresAdapter, sql } from 'kysely'

/**
 * Webhook endpoints: the site's listener and each URL of each webhook behavior, with the health
 * delivery keeps (state, failures in a row, last success and failure) and what an operator set
 * (paused, rate limit, concurrency, file-aware bodies). `endpoint_key` names the endpoint within
 * its site: `site`, or the behavior's id and URL. Notifications an endpoint does not take now
 * (paused or disabled) wait in the outbox as `held`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', isPg ? 'bigserial' : 'integer', (c) =>
      isPg ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('endpoint_key', 'text', (c) => c.notNull())
    .addColumn('behavior_id', 'bigint')
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull().defaultTo('enabled'))
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('failing_since', 'bigint')
    .addColumn('last_success_at', 'bigint')
    .addColumn('last_failure_at', 'bigint')
    .addColumn('last_failure_reason', 'text')
    .addColumn('disabled_at', 'bigint')
    .addColumn('disabled_reason', 'text')
    .addColumn('rate_limit', 'integer')
    .addColumn('concurrency', 'integer')
    .addColumn('file_aware', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('webhook_endpoints_site_key')
    .on('webhook_endpoints')
    .columns(['site_id', 'endpoint_key'])
    .unique()
    .execute()
  // File-aware endpoints: the version of the file that fired the event, fixed at the first
  // attempt, so that every attempt links to those bytes (the janitor keeps them meanwhile).
  await db.schema.alterTable('webhook_notifications').addColumn('file_id', 'bigint').execute()
  await db.schema.alterTable('webhook_notifications').addColumn('file_blob_key', 'text').execute()
  await db.schema.alterTable('webhook_notifications').addColumn('file_size', 'bigint').execute()
  await db.schema
    .createIndex('webhook_notifications_file_blob')
    .on('webhook_notifications')
    .column('file_blob_key')
    .where(sql.ref('file_blob_key'), 'is not', null)
    .execute()
  // The waiting notifications of one endpoint: held ones released, queued ones counted. Waiting
  // rows only: the update that ends a delivery adds no entry to it (recoveries, which read
  // finished rows, find them by age through the created_at summary).
  await db.schema
    .createIndex('webhook_notifications_site_behavior')
    .on('webhook_notifications')
    .columns(['site_id', 'behavior_id', 'id'])
    .where(sql.ref('state'), 'in', ['pending', 'held'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('webhook_notifications_file_blob').execute()
  for (const c of ['file_size', 'file_blob_key', 'file_id'])
    await db.schema.alterTable('webhook_notifications').dropColumn(c).execute()
  await db.schema.dropIndex('webhook_notifications_site_behavior').execute()
  await db.schema.dropTable('webhook_endpoints').execute()
}
