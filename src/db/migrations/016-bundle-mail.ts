import { type Kysely, PostgresAdapter } from 'kysely'

/**
 * Share links sent by e-mail, and who hears of their use. `bundle_recipients`: the people a
 * bundle was (or is to be) shared with, one row per address and bundle (`recipient_lower` unique
 * per bundle); `sent_at` is the last time the link was mailed to them. `bundle_notifications`:
 * users told by e-mail when someone registers on, or uploads to, a bundle. The mail outbox gains
 * `sender_user_id`, the user whose action queued a message (null for a site-wide key's), so that
 * the hourly limit on shared mail counts from the database and holds across processes.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const idType = isPg ? 'bigserial' : 'integer'
  const auto = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())
  await db.schema
    .createTable('bundle_recipients')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('bundle_id', 'bigint', (c) => c.notNull().references('bundles.id').onDelete('cascade'))
    // Who added the recipient; null for a site-wide key.
    .addColumn('user_id', 'bigint', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('recipient', 'text', (c) => c.notNull())
    .addColumn('recipient_lower', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('company', 'text')
    .addColumn('note', 'text')
    .addColumn('sent_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('bundle_recipients_address')
    .on('bundle_recipients')
    .columns(['bundle_id', 'recipient_lower'])
    .unique()
    .execute()
  await db.schema
    .createIndex('bundle_recipients_bundle')
    .on('bundle_recipients')
    .columns(['bundle_id', 'id'])
    .execute()
  await db.schema
    .createTable('bundle_notifications')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('bundle_id', 'bigint', (c) => c.notNull().references('bundles.id').onDelete('cascade'))
    .addColumn('notify_user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('notify_on_registration', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('notify_on_upload', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('bundle_notifications_bundle')
    .on('bundle_notifications')
    .columns(['bundle_id', 'id'])
    .execute()
  await db.schema
    .createIndex('bundle_notifications_user')
    .on('bundle_notifications')
    .column('notify_user_id')
    .execute()
  await db.schema.alterTable('mail_outbox').addColumn('sender_user_id', 'bigint').execute()
  await db.schema
    .createIndex('mail_outbox_sender')
    .on('mail_outbox')
    .columns(['site_id', 'kind', 'sender_user_id', 'created_at'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('mail_outbox_sender').execute()
  await db.schema.alterTable('mail_outbox').dropColumn('sender_user_id').execute()
  await db.schema.dropTable('bundle_notifications').execute()
  await db.schema.dropTable('bundle_recipients').execute()
}
