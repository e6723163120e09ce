import type { Kysely } from 'kysely'

const RIGHTS = ['ftp_permission', 'sftp_permission', 'dav_permission', 'restapi_permission'] as const

/**
 * Per-user access rights and address limits (docs/decisions.md, "Access rights and address
 * limits"): each protocol right (1: allowed, the default, so existing users keep every way in),
 * the addresses a user may log in from (`allowed_ips`, one address or CIDR a line; null: any), the
 * moment access ends (`authenticate_until`, ms; null: never) and `billing_permission`; and the
 * site-wide `allowed_ips`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  for (const right of RIGHTS) {
    await db.schema
      .alterTable('users')
      .addColumn(right, 'integer', (c) => c.notNull().defaultTo(1))
      .execute()
  }
  await db.schema.alterTable('users').addColumn('allowed_ips', 'text').execute()
  await db.schema.alterTable('users').addColumn('authenticate_until', 'bigint').execute()
  await db.schema
    .alterTable('users')
    .addColumn('billing_permission', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema.alterTable('sites').addColumn('allowed_ips', 'text').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sites').dropColumn('allowed_ips').execute()
  for (const column of [...RIGHTS, 'allowed_ips', 'authenticate_until', 'billing_permission']) {
    await db.schema.alterTable('users').dropColumn(column).execute()
  }
}
