import { type Kysely, PostgresAdapter, sql } from 'kysely'

/**
 * Outbound webhooks: each site's listener settings, the outbox of notifications waiting to be
 * delivered (written in the transaction of the Action that causes them), and the log of every
 * delivery attempt (what the webhook-log exports read).
 */
export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const idType = isPg ? 'bigserial' : 'integer'
  const auto = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())

  await db.schema
    .createTable('webhook_settings')
    .addColumn('site_id', 'bigint', (c) => c.primaryKey().references('sites.id'))
    .addColumn('url', 'text')
    // JSON array of operation names (Upload, Download, …).
    .addColumn('triggers', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('verification_token', 'text', (c) => c.notNull())
    .addColumn('signing_secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('webhook_notifications')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    // The Action that caused it (null for a test notification).
    .addColumn('action_id', 'bigint')
    // `webhook-id`: the same on every attempt, so listeners can drop duplicates.
    .addColumn('message_id', 'text', (c) => c.notNull().unique())
    .addColumn('operation', 'text', (c) => c.notNull())
    .addColumn('user_id', 'bigint')
    .addColumn('username', 'text', (c) => c.notNull())
    .addColumn('protocol', 'text', (c) => c.notNull())
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('sourcepath', 'text', (c) => c.notNull())
    .addColumn('folder', 'text', (c) => c.notNull())
    // pending (due at next_attempt_at), delivered, failed (attempts used up) or dropped
    // (the site turned webhooks off, or the trigger, before it was sent).
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    // 1 when an operator asked for this send (retry endpoint, test): settings' enabled/triggers
    // do not apply.
    .addColumn('forced', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint')
    // A worker's claim: until lease_until no other worker takes the row.
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  // Workers look only at pending rows, by due time: first attempts and retries apart, so that a
  // backlog of one kind is never scanned to find the other.
  await sql`create index webhook_notifications_due_first on webhook_notifications (next_attempt_at, id) where state = 'pending' and attempts = 0`.execute(
    db,
  )
  await sql`create index webhook_notifications_due_retry on webhook_notifications (next_attempt_at, id) where state = 'pending' and attempts > 0`.execute(
    db,
  )
  // Retention, by age. Not an index on state: the planner took it over the partial indexes
  // above and sorted every pending row to claim a few.
  await db.schema
    .createIndex('webhook_notifications_created')
    .on('webhook_notifications')
    .column('created_at')
    .execute()

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('notification_id', 'bigint', (c) =>
      c.notNull().references('webhook_notifications.id').onDelete('cascade'),
    )
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('user_id', 'bigint')
    .addColumn('operation', 'text', (c) => c.notNull())
    // HTTP status, or a curl-style code for a network failure (6, 7, 28, 35, 52, 56).
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('success', 'integer', (c) => c.notNull())
    .addColumn('request_headers', 'text', (c) => c.notNull())
    .addColumn('request_method', 'text', (c) => c.notNull())
    .addColumn('request_url', 'text', (c) => c.notNull())
    .addColumn('request_body', 'text', (c) => c.notNull())
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('folder', 'text', (c) => c.notNull())
    .addColumn('response_size', 'bigint', (c) => c.notNull())
    .addColumn('response_body', 'text', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('webhook_attempts_site_time')
    .on('webhook_attempts')
    .columns(['site_id', 'created_at', 'id'])
    .execute()
  await db.schema
    .createIndex('webhook_attempts_notification')
    .on('webhook_attempts')
    .columns(['notification_id', 'attempt'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['webhook_attempts', 'webhook_notifications', 'webhook_settings']) {
    await db.schema.dropTable(t).execute()
  }
}
