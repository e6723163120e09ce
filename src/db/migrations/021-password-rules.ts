import { type Kysely, PostgresAdapter } from 'kysely'

/**
 * Password rules (docs/decisions.md, "Password rules"):
 * - the site's rules, as the Files.com `Site` fields of the same names, on `sites`, with Wharf's
 *   defaults (8 characters at least, which Wharf has always required, nothing else);
 * - a user's `require_password_change` and own `password_validity_days`;
 * - `password_history`: the hashes of a user's earlier passwords (never the passwords), for
 *   `max_prior_passwords`; deleted with the user.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const idType = isPg ? 'bigserial' : 'integer'
  const auto = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())
  const site = (name: string, type: 'integer' | 'bigint', dflt: number | null) =>
    db.schema
      .alterTable('sites')
      .addColumn(name, type, (c) => (dflt === null ? c : c.notNull().defaultTo(dflt)))
      .execute()
  await site('password_min_length', 'integer', 8)
  await site('password_require_letter', 'integer', 0)
  await site('password_require_mixed', 'integer', 0)
  await site('password_require_number', 'integer', 0)
  await site('password_require_special', 'integer', 0)
  await site('max_prior_passwords', 'integer', 0)
  await site('password_validity_days', 'integer', null)

  await db.schema
    .alterTable('users')
    .addColumn('require_password_change', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema.alterTable('users').addColumn('password_validity_days', 'integer').execute()

  await db.schema
    .createTable('password_history')
    .addColumn('id', idType, auto)
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('password_hash', 'text', (c) => c.notNull())
    // When this password stopped being the user's (epoch ms).
    .addColumn('replaced_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('password_history_user')
    .on('password_history')
    .columns(['user_id', 'id'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('password_history').execute()
  await db.schema.alterTable('users').dropColumn('password_validity_days').execute()
  await db.schema.alterTable('users').dropColumn('require_password_change').execute()
  for (const c of [
    'password_validity_days',
    'max_prior_passwords',
    'password_require_special',
    'password_require_number',
    'password_require_mixed',
    'password_require_letter',
    'password_min_length',
  ])
    await db.schema.alterTable('sites').dropColumn(c).execute()
}
