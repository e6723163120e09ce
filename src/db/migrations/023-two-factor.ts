import { type Kysely, PostgresAdapter } from 'kysely'

/**
 * Two-factor sign-in (docs/decisions.md, "Two-factor sign-in"):
 * - `two_factor_methods`: a user's TOTP authenticators. The secret is stored encrypted under a key
 *   derived from the site's signing secret; `confirmed_at` is null until the user has entered a
 *   code from it (an unconfirmed one is refused after `setup_expires_at`); `last_counter` is the
 *   last 30-second step whose code was accepted, so a code is not accepted twice.
 * - `two_factor_recovery_codes`: one-time codes given at confirmation, stored as their sha256.
 * - `users.require_2fa` (`use_system_setting`, `always_require`, `never_require`), the site's
 *   `require_2fa` and `require_2fa_user_type` (`all`, `site_admins`), and
 *   `sessions.two_factor_setup`: 1 for the session of a user who must enrol and has not yet.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const idType = isPg ? 'bigserial' : 'integer'
  const auto = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())

  await db.schema
    .createTable('two_factor_methods')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('method_type', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('confirmed_at', 'bigint')
    .addColumn('setup_expires_at', 'bigint', (c) => c.notNull())
    .addColumn('last_counter', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('two_factor_methods_user')
    .on('two_factor_methods')
    .columns(['user_id', 'id'])
    .execute()

  await db.schema
    .createTable('two_factor_recovery_codes')
    .addColumn('id', idType, auto)
    .addColumn('site_id', 'bigint', (c) => c.notNull().references('sites.id'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('code_hash', 'text', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('two_factor_recovery_codes_user')
    .on('two_factor_recovery_codes')
    .columns(['user_id', 'code_hash'])
    .execute()

  await db.schema
    .alterTable('users')
    .addColumn('require_2fa', 'text', (c) => c.notNull().defaultTo('use_system_setting'))
    .execute()
  await db.schema
    .alterTable('sites')
    .addColumn('require_2fa', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema
    .alterTable('sites')
    .addColumn('require_2fa_user_type', 'text', (c) => c.notNull().defaultTo('all'))
    .execute()
  await db.schema
    .alterTable('sessions')
    .addColumn('two_factor_setup', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sessions').dropColumn('two_factor_setup').execute()
  await db.schema.alterTable('sites').dropColumn('require_2fa_user_type').execute()
  await db.schema.alterTable('sites').dropColumn('require_2fa').execute()
  await db.schema.alterTable('users').dropColumn('require_2fa').execute()
  await db.schema.dropTable('two_factor_recovery_codes').execute()
  await db.schema.dropTable('two_factor_methods').execute()
}
