import { type Kysely, PostgresAdapter } from 'kysely'

/**
 * Folder behaviors: settings attached to a folder path (and, when `recursive`, to every folder
 * inside it). `value` is the type's settings as JSON text. The path is kept as written and in
 * lower case, as files' paths are: every look-up is by the lower-case path, which the index
 * serves (the folder's own path and its ancestors in one `IN`).
 */
export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  await db.schema
    .createTable('behaviors')
    .addColumn('id', isPg ? 'bigserial' : 'integer', (c) =>
      isPg ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('path_lower', 'text', (c) => c.notNull())
    .addColumn('behavior', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('description', 'text')
    .addColumn('recursive', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('disable_parent_folder_behavior', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('behaviors_site_path')
    .on('behaviors')
    .columns(['site_id', 'path_lower'])
    .execute()
  await db.schema
    .createIndex('behaviors_site_behavior')
    .on('behaviors')
    .columns(['site_id', 'behavior', 'id'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('behaviors').execute()
}
