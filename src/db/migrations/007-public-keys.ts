import { type Kysely, PostgresAdapter } from 'kysely'

/**
 * SSH public keys of users (the PublicKey resource), for SFTP logins by key. A key belongs to
 * one user and goes with them; the same key may not be registered twice in a site, so a login
 * by key finds at most one user.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const idType = isPg ? 'bigserial' : 'integer'
  const auto = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())
  await db.schema
    .createTable('public_keys')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('title', 'text', (c) => c.notNull())
    // The key as given, normalised to "<algorithm> <base64>" (no comment).
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('fingerprint_md5', 'text', (c) => c.notNull())
    .addColumn('fingerprint_sha256', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_login_at', 'bigint')
    .execute()
  await db.schema
    .createIndex('public_keys_site_sha256')
    .on('public_keys')
    .columns(['site_id', 'fingerprint_sha256'])
    .unique()
    .execute()
  await db.schema.createIndex('public_keys_user').on('public_keys').columns(['user_id', 'id']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('public_keys').execute()
}
