import type { Kysely } from 'kysely'

const CONTACT = ['contact_name', 'phone', 'email'] as const

/**
 * Read-only site administrators and the site's billing contact (docs/decisions.md, "Read-only
 * site administrators" and "Billing contact"): `readonly_site_admin` on users (0 for everyone,
 * so existing users keep what they had), and the contact fields of the site (null: not given).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('users')
    .addColumn('readonly_site_admin', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  for (const column of CONTACT) {
    await db.schema.alterTable('sites').addColumn(column, 'text').execute()
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const column of CONTACT) {
    await db.schema.alterTable('sites').dropColumn(column).execute()
  }
  await db.schema.alterTable('users').dropColumn('readonly_site_admin').execute()
}
