import { type Kysely, PostgresAdapter } from 'kysely'

/**
 * Exports (webhook log and action history): each row is the export as the API shows it and the
 * durable job that builds it. A worker claims a `building` row with a lease, writes the matching
 * records as CSV to the blob store and marks it `ready` (or `failed`); whoever claims it after a
 * crash builds it again from the start.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const idType = isPg ? 'bigserial' : 'integer'
  const auto = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())

  await db.schema
    .createTable('exports')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    // webhook_log (ActionNotificationExport) or history (HistoryExport)
    .addColumn('kind', 'text', (c) => c.notNull())
    // The user the export acts for and belongs to; null for a site-wide key. No foreign key: a
    // deleted user's exports stay (for site admins) until retention removes them with their files.
    .addColumn('user_id', 'bigint')
    // building, ready or failed
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('failure_reason', 'text')
    .addColumn('start_at', 'bigint')
    .addColumn('end_at', 'bigint')
    // JSON object: the query fields as they were given.
    .addColumn('query', 'text', (c) => c.notNull())
    // The results, once ready: the CSV blob, its size, and how many records it holds.
    .addColumn('blob_key', 'text')
    .addColumn('result_bytes', 'bigint')
    .addColumn('result_count', 'bigint')
    // How many times a worker has claimed it (a build cut short by a crash is claimed again).
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  // Workers look for building rows; retention for old ones.
  await db.schema.createIndex('exports_status').on('exports').columns(['status', 'id']).execute()
  await db.schema.createIndex('exports_created').on('exports').column('created_at').execute()
  await db.schema.createIndex('exports_site_user').on('exports').columns(['site_id', 'user_id']).execute()

  // An export reads one site's records in id order, a page at a time from where the last ended.
  await db.schema
    .createIndex('webhook_attempts_site_id')
    .on('webhook_attempts')
    .columns(['site_id', 'id'])
    .execute()
  await db.schema.createIndex('actions_site_id').on('actions').columns(['site_id', 'id']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('actions_site_id').execute()
  await db.schema.dropIndex('webhook_attempts_site_id').execute()
  await db.schema.dropTable('exports').execute()
}
