import { type Kysely, PostgresAdapter } from 'kysely'

/**
 * Mail Wharf sends (share links, upload and registration notices, alerts to admins): one row per
 * message, written in the transaction of the action that causes it, so a message exists exactly
 * when its action committed. A worker claims due rows with a lease, hands each to the operator's
 * SMTP server, and marks it `sent`; a failure is tried again later, a permanent refusal (or the
 * last attempt) marks it `failed`. A crash leaves the row for the next worker: nothing is lost.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const idType = isPg ? 'bigserial' : 'integer'
  const auto = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())
  await db.schema
    .createTable('mail_outbox')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    // What the message is about (`bundle_share`, `bundle_upload`, …), for the log and the operator.
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('to_address', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('text_body', 'text', (c) => c.notNull())
    .addColumn('html_body', 'text')
    // The Message-ID header, fixed when the row is written: a message sent again after a crash
    // between the server's acceptance and the row's update carries the same one.
    .addColumn('message_id', 'text', (c) => c.notNull())
    // queued, sent or failed.
    .addColumn('state', 'text', (c) => c.notNull().defaultTo('queued'))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('sent_at', 'bigint')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('mail_outbox_due')
    .on('mail_outbox')
    .columns(['state', 'next_attempt_at'])
    .execute()
  await db.schema.createIndex('mail_outbox_created').on('mail_outbox').column('created_at').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('mail_outbox').execute()
}
