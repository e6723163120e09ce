import { type Kysely, PostgresAdapter } from 'kysely'

/**
 * The recipients' side of share links. A registration is one visit: every visitor of a link starts
 * one (with a name, e-mail and company when the link asks for them), and its code is what the
 * visitor's requests carry; `max_uses` counts these. Downloads (one row per file, or one per ZIP)
 * and actions (uploads, folder creations) are kept per registration. All three go with their
 * bundle (cascade), and so with its creator.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const idType = isPg ? 'bigserial' : 'integer'
  const auto = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())
  await db.schema
    .createTable('bundle_registrations')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('bundle_id', 'bigint', (c) => c.notNull().references('bundles.id').onDelete('cascade'))
    // sha256 of the code: the code itself is a credential and is shown only once, to the visitor.
    .addColumn('code_hash', 'text', (c) => c.notNull())
    // The code's first characters, to tell registrations apart (and name upload folders) without it.
    .addColumn('code_start', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('email', 'text')
    .addColumn('company', 'text')
    .addColumn('ip', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('bundle_registrations_code')
    .on('bundle_registrations')
    .column('code_hash')
    .unique()
    .execute()
  await db.schema
    .createIndex('bundle_registrations_bundle')
    .on('bundle_registrations')
    .columns(['bundle_id', 'id'])
    .execute()
  for (const table of ['bundle_downloads', 'bundle_actions'] as const) {
    let t = db.schema
      .createTable(table)
      .addColumn('id', idType, auto)
      .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
      .addColumn('bundle_id', 'bigint', (c) => c.notNull().references('bundles.id').onDelete('cascade'))
      .addColumn('bundle_registration_id', 'bigint', (c) =>
        c.notNull().references('bundle_registrations.id').onDelete('cascade'),
      )
      .addColumn('path', 'text', (c) => c.notNull())
    t =
      table === 'bundle_downloads'
        ? // file or full_zip
          t.addColumn('download_method', 'text', (c) => c.notNull())
        : t
            .addColumn('action', 'text', (c) => c.notNull())
            .addColumn('source', 'text')
            .addColumn('destination', 'text')
    await t.addColumn('created_at', 'bigint', (c) => c.notNull()).execute()
    await db.schema.createIndex(`${table}_bundle`).on(table).columns(['bundle_id', 'id']).execute()
    await db.schema
      .createIndex(`${table}_registration`)
      .on(table)
      .columns(['bundle_registration_id', 'id'])
      .execute()
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('bundle_actions').execute()
  await db.schema.dropTable('bundle_downloads').execute()
  await db.schema.dropTable('bundle_registrations').execute()
}
