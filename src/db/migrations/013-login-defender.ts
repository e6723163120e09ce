import { type Kysely, PostgresAdapter } from 'kysely'

/**
 * The login defender's state, shared by every node on the database (docs/decisions.md, "The
 * login defender"):
 * - `login_failures`: one row per failed login of an address, kept while it is inside the window
 *   (older rows are deleted as new failures come in).
 * - `banned_addresses`: one row per banned address. A login reads only this table, by its primary
 *   key, so an address that is not banned costs one small indexed read.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const idType = isPg ? 'bigserial' : 'integer'
  const auto = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())
  await db.schema
    .createTable('login_failures')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    // Normalised text form (IPv4-mapped IPv6 as IPv4, IPv6 compressed).
    .addColumn('address', 'text', (c) => c.notNull())
    // What failed: a failedlogin Action's failure_type, or `publickey`.
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('login_failures_address')
    .on('login_failures')
    .columns(['site_id', 'address', 'created_at'])
    .execute()
  await db.schema.createIndex('login_failures_created').on('login_failures').column('created_at').execute()
  await db.schema
    .createTable('banned_addresses')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('banned_at', 'bigint', (c) => c.notNull())
    .addColumn('banned_until', 'bigint', (c) => c.notNull())
    // Failures within the window that led to the ban.
    .addColumn('failures', 'integer', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('banned_addresses_site_address')
    .on('banned_addresses')
    .columns(['site_id', 'address'])
    .unique()
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('banned_addresses').execute()
  await db.schema.dropTable('login_failures').execute()
}
