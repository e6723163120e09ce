import { type Kysely, PostgresAdapter, sql } from 'kysely'

/**
 * Groups of users and their memberships; a folder permission belongs to a user or to a group
 * (exactly one of `user_id`, `group_id`). Deleting a group deletes its memberships and
 * permissions, deleting a user their memberships (foreign keys, both databases).
 *
 * SQLite cannot relax a NOT NULL column, so there `permissions` is rebuilt with the same rows,
 * ids and AUTOINCREMENT sequence (no removed permission's id is handed out again).
 */
export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const idType = isPg ? 'bigserial' : 'integer'
  const auto = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())

  await db.schema
    .createTable('groups')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('name_lower', 'text', (c) => c.notNull())
    .addColumn('notes', 'text')
    // Stored and shown for the Files.com SDK; not enforced yet (docs/decisions.md, "Groups").
    .addColumn('allowed_ips', 'text')
    .addColumn('ftp_permission', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('sftp_permission', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('dav_permission', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('restapi_permission', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('groups_site_name_lower')
    .on('groups')
    .columns(['site_id', 'name_lower'])
    .unique()
    .execute()

  await db.schema
    .createTable('group_users')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('group_id', 'bigint', (c) => c.notNull().references('groups.id').onDelete('cascade'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('admin', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('group_users_group_user')
    .on('group_users')
    .columns(['group_id', 'user_id'])
    .unique()
    .execute()
  // Every file access reads the caller's groups.
  await db.schema.createIndex('group_users_user').on('group_users').columns(['user_id', 'group_id']).execute()

  if (isPg) {
    await sql`alter table permissions alter column user_id drop not null`.execute(db)
    await sql`alter table permissions add column group_id bigint references groups(id) on delete cascade`.execute(
      db,
    )
    await sql`alter table permissions add constraint permissions_one_grantee
      check ((user_id is null) <> (group_id is null))`.execute(db)
  } else {
    await sql`create table permissions_new (
      id integer primary key autoincrement,
      site_id bigint not null references sites(id),
      user_id bigint references users(id) on delete cascade,
      group_id bigint references groups(id) on delete cascade,
      path text not null,
      permission text not null,
      created_at bigint not null,
      check ((user_id is null) <> (group_id is null))
    )`.execute(db)
    await sql`insert into permissions_new (id, site_id, user_id, path, permission, created_at)
      select id, site_id, user_id, path, permission, created_at from permissions`.execute(db)
    await sql`insert into sqlite_sequence (name, seq)
      select 'permissions_new', seq from sqlite_sequence where name = 'permissions'
      and not exists (select 1 from sqlite_sequence where name = 'permissions_new')`.execute(db)
    await sql`update sqlite_sequence set seq = max(seq, (select seq from sqlite_sequence where name = 'permissions'))
      where name = 'permissions_new'`.execute(db)
    await sql`drop table permissions`.execute(db)
    await sql`alter table permissions_new rename to permissions`.execute(db)
    await db.schema
      .createIndex('permissions_unique')
      .on('permissions')
      .columns(['site_id', 'user_id', 'path', 'permission'])
      .unique()
      .execute()
  }
  await db.schema
    .createIndex('permissions_group_unique')
    .on('permissions')
    .columns(['site_id', 'group_id', 'path', 'permission'])
    .unique()
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  // Permissions of groups have nobody to go to without groups.
  await db.deleteFrom('permissions').where('group_id', 'is not', null).execute()
  await db.schema.dropIndex('permissions_group_unique').execute()
  if (isPg) {
    await sql`alter table permissions drop constraint permissions_one_grantee`.execute(db)
    await sql`alter table permissions drop column group_id`.execute(db)
    await sql`alter table permissions alter column user_id set not null`.execute(db)
  } else {
    // SQLite drops no column that a foreign key or a check names: the table is rebuilt as before.
    await sql`create table permissions_old (
      id integer primary key autoincrement,
      site_id bigint not null references sites(id),
      user_id bigint not null references users(id) on delete cascade,
      path text not null,
      permission text not null,
      created_at bigint not null
    )`.execute(db)
    await sql`insert into permissions_old (id, site_id, user_id, path, permission, created_at)
      select id, site_id, user_id, path, permission, created_at from permissions`.execute(db)
    await sql`insert into sqlite_sequence (name, seq)
      select 'permissions_old', seq from sqlite_sequence where name = 'permissions'
      and not exists (select 1 from sqlite_sequence where name = 'permissions_old')`.execute(db)
    await sql`drop table permissions`.execute(db)
    await sql`alter table permissions_old rename to permissions`.execute(db)
    await db.schema
      .createIndex('permissions_unique')
      .on('permissions')
      .columns(['site_id', 'user_id', 'path', 'permission'])
      .unique()
      .execute()
  }
  await db.schema.dropTable('group_users').execute()
  await db.schema.dropTable('groups').execute()
}
