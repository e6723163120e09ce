import type { Kysely } from 'kysely'

/**
 * An upload's own lifetime without activity, in seconds (null: UPLOAD_EXPIRY_MINUTES). Uploads
 * written by a transfer protocol are kept alive by their connection and get a short one, so that
 * what a crashed process left is cleared within minutes instead of a day.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('uploads').addColumn('expiry_seconds', 'integer').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('uploads').dropColumn('expiry_seconds').execute()
}
