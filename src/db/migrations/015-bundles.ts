import { type Kysely, PostgresAdapter } from 'kysely'

/**
 * Share links (the Bundle resource): a bundle shares one or more paths of its creator with people
 * outside the site, under a code that forms its public URL. The code is unique per site
 * case-insensitively (`code_lower`). A bundle goes with its creator (a user's deletion cascades);
 * a site-wide key's bundles have no creator. Users gain `attachments_permission`, the flag that
 * lets a user who is not a site admin create bundles.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const idType = isPg ? 'bigserial' : 'integer'
  const auto = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())
  const flag = (c: any) => c.notNull().defaultTo(0)
  await db.schema
    .alterTable('users')
    .addColumn('attachments_permission', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema
    .createTable('bundles')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('user_id', 'bigint', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('api_key_id', 'bigint', (c) => c.references('api_keys.id').onDelete('set null'))
    .addColumn('code', 'text', (c) => c.notNull())
    .addColumn('code_lower', 'text', (c) => c.notNull())
    .addColumn('password_hash', 'text')
    // read, write, read_write or preview_only.
    .addColumn('permissions', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('start_access_on_date', 'bigint')
    .addColumn('max_uses', 'bigint')
    .addColumn('require_registration', 'integer', flag)
    .addColumn('require_share_recipient', 'integer', flag)
    .addColumn('skip_name', 'integer', flag)
    .addColumn('skip_email', 'integer', flag)
    .addColumn('skip_company', 'integer', flag)
    .addColumn('description', 'text')
    .addColumn('note', 'text')
    .addColumn('path_template', 'text')
    .addColumn('path_template_time_zone', 'text')
    .addColumn('dont_separate_submissions_by_folder', 'integer', flag)
    .addColumn('send_email_receipt_to_uploader', 'integer', flag)
    .addColumn('dont_allow_folders_in_uploads', 'integer', flag)
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('bundles_site_code')
    .on('bundles')
    .columns(['site_id', 'code_lower'])
    .unique()
    .execute()
  await db.schema
    .createIndex('bundles_site_user')
    .on('bundles')
    .columns(['site_id', 'user_id', 'id'])
    .execute()
  await db.schema.createIndex('bundles_api_key').on('bundles').column('api_key_id').execute()
  await db.schema
    .createTable('bundle_paths')
    .addColumn('id', idType, auto)
    .addColumn('bundle_id', 'bigint', (c) => c.notNull().references('bundles.id').onDelete('cascade'))
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('recursive', 'integer', (c) => c.notNull().defaultTo(1))
    .execute()
  await db.schema.createIndex('bundle_paths_bundle').on('bundle_paths').columns(['bundle_id', 'id']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('bundle_paths').execute()
  await db.schema.dropTable('bundles').execute()
  await db.schema.alterTable('users').dropColumn('attachments_permission').execute()
}
