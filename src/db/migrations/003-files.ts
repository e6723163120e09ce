import { type Kysely, PostgresAdapter, sql } from 'kysely'

/**
 * Files and folders (metadata; the bytes live in the blob store), uploads in progress with their
 * staged parts, the durable queue of blobs to delete, and the indexes the /history endpoints need.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const idType = isPg ? 'bigserial' : 'integer'
  const auto = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())
  const pathType = isPg ? sql`text collate "C"` : 'text'

  await db.schema
    .createTable('files')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('path', 'text', (c) => c.notNull())
    // Paths are case-insensitive and case-preserving: uniqueness and lookups use the lower form.
    // Byte order on PostgreSQL whatever the database's collation: "everything inside a folder"
    // is the range `folder/` … `folder0`, which only byte order keeps contiguous.
    .addColumn('path_lower', pathType, (c) => c.notNull())
    .addColumn('parent_lower', pathType, (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('blob_key', 'text')
    .addColumn('md5', 'text')
    .addColumn('crc32', 'text')
    .addColumn('custom_metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('mtime', 'bigint', (c) => c.notNull())
    .addColumn('provided_mtime', 'bigint')
    .addColumn('created_by_id', 'bigint')
    .addColumn('created_by_api_key_id', 'bigint')
    .addColumn('last_modified_by_id', 'bigint')
    .addColumn('last_modified_by_api_key_id', 'bigint')
    .execute()
  if (isPg) {
    // A B-tree entry holds at most ~2.7 kB, and a path may be 5000 characters (20 kB of UTF-8):
    // uniqueness goes through a digest, lookups through hash indexes (no size limit). Ranges of
    // paths (everything inside a folder) scan, within the site.
    await sql`create unique index files_site_path on files (site_id, md5(path_lower))`.execute(db)
    await sql`create index files_path on files using hash (path_lower)`.execute(db)
    await sql`create index files_parent on files using hash (parent_lower)`.execute(db)
    // Everything inside a folder: a range over the first 500 characters (insideFolder() in
    // file-repository.ts states the range on this prefix as well as on the whole path).
    await sql`create index files_site_prefix on files (site_id, substr(path_lower, 1, 500))`.execute(db)
  } else {
    await db.schema
      .createIndex('files_site_path')
      .on('files')
      .columns(['site_id', 'path_lower'])
      .unique()
      .execute()
    await db.schema
      .createIndex('files_site_parent')
      .on('files')
      .columns(['site_id', 'parent_lower', 'path_lower'])
      .execute()
  }

  // The janitor checks that no file still uses a blob before deleting it.
  await db.schema.createIndex('files_blob').on('files').column('blob_key').execute()

  await db.schema
    .createTable('uploads')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    // Random, unguessable: it names the upload in part URLs and in `action=end`.
    .addColumn('ref', 'text', (c) => c.notNull().unique())
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('user_id', 'bigint')
    .addColumn('api_key_id', 'bigint')
    .addColumn('mkdir_parents', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('with_rename', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('provided_mtime', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('uploads_expires').on('uploads').column('expires_at').execute()

  await db.schema
    .createTable('upload_parts')
    .addColumn('upload_id', 'bigint', (c) => c.notNull().references('uploads.id').onDelete('cascade'))
    .addColumn('part_number', 'integer', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('upload_parts_pk', ['upload_id', 'part_number'])
    .execute()

  // A blob is deleted only after the change that orphaned it commits: the row is written in that
  // transaction, and a janitor deletes the blob and then the row (a crash between them is harmless).
  await db.schema
    .createTable('blob_garbage')
    .addColumn('id', idType, auto)
    .addColumn('blob_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()

  // History by file or folder (lower(path) ranges), by user, and file actions by time. On
  // PostgreSQL a hash index, as above: a B-tree could not hold a 5000-character path.
  if (isPg) {
    await sql`create index actions_site_path on actions using hash (lower(path))`.execute(db)
    // A folder's history: a range over the first 500 characters, in byte order.
    await sql`create index actions_site_path_prefix on actions (site_id, (substr(lower(path), 1, 500) collate "C"), created_at, id)`.execute(
      db,
    )
  } else {
    await sql`create index actions_site_path on actions (site_id, lower(path), created_at, id)`.execute(db)
  }
  await db.schema
    .createIndex('actions_site_user')
    .on('actions')
    .columns(['site_id', 'user_id', 'created_at', 'id'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('actions_site_user').execute()
  await db.schema.dropIndex('actions_site_path').execute()
  await db.schema.dropIndex('actions_site_path_prefix').ifExists().execute()
  for (const t of ['blob_garbage', 'upload_parts', 'uploads', 'files']) await db.schema.dropTable(t).execute()
}
