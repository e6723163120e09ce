import { type Kysely, PostgresAdapter } from 'kysely'

/** Sites, users, folder permissions, API keys, sessions and the action history. */
export async function up(db: Kysely<any>): Promise<void> {
  // `bigint` is INTEGER affinity in SQLite and int8 in PostgreSQL; ids use the identity form of each
  // (SQLite's AUTOINCREMENT so that a deleted row's id is never handed out again).
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const idType = isPg ? 'bigserial' : 'integer'
  const auto = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())

  await db.schema
    .createTable('sites')
    .addColumn('id', idType, auto)
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('signing_secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('users')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('username', 'text', (c) => c.notNull())
    .addColumn('username_lower', 'text', (c) => c.notNull())
    .addColumn('password_hash', 'text')
    .addColumn('name', 'text')
    .addColumn('email', 'text')
    .addColumn('site_admin', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('self_managed', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('last_login_at', 'bigint')
    .addColumn('password_set_at', 'bigint')
    .execute()
  await db.schema
    .createIndex('users_site_username_lower')
    .on('users')
    .columns(['site_id', 'username_lower'])
    .unique()
    .execute()

  await db.schema
    .createTable('permissions')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('permission', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('permissions_unique')
    .on('permissions')
    .columns(['site_id', 'user_id', 'path', 'permission'])
    .unique()
    .execute()

  await db.schema
    .createTable('api_keys')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('user_id', 'bigint', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text')
    .addColumn('description', 'text')
    .addColumn('permission_set', 'text', (c) => c.notNull())
    .addColumn('path', 'text')
    .addColumn('platform', 'text')
    .addColumn('expires_at', 'bigint')
    .addColumn('last_use_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('api_keys_site_user').on('api_keys').columns(['site_id', 'user_id']).execute()

  await db.schema
    .createTable('sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey().notNull())
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_active_at', 'bigint', (c) => c.notNull())
    .addColumn('ip', 'text')
    .addColumn('interface', 'text', (c) => c.notNull())
    .addColumn('reauth_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('reauth_window_start', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('reauth_window_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema.createIndex('sessions_user').on('sessions').column('user_id').execute()

  await db.schema
    .createTable('actions')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('user_id', 'bigint')
    .addColumn('username', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('path', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('folder', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('source', 'text')
    .addColumn('destination', 'text')
    .addColumn('display', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('ip', 'text')
    .addColumn('interface', 'text')
    .addColumn('failure_type', 'text')
    .addColumn('targets', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute()
  await db.schema
    .createIndex('actions_site_created')
    .on('actions')
    .columns(['site_id', 'created_at', 'id'])
    .execute()
  // Login throttling counts recent failures per username and attempts per IP.
  await db.schema
    .createIndex('actions_login_user')
    .on('actions')
    .columns(['site_id', 'action', 'username', 'created_at'])
    .execute()
  await db.schema
    .createIndex('actions_login_ip')
    .on('actions')
    .columns(['site_id', 'ip', 'created_at'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['actions', 'sessions', 'api_keys', 'permissions', 'users', 'sites']) {
    await db.schema.dropTable(t).execute()
  }
}
