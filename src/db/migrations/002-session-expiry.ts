import type { Kysely } from 'kysely'

/** Lets logins purge idle sessions by age without scanning the table. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('sessions_last_active')
    .on('sessions')
    .columns(['site_id', 'last_active_at'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('sessions_last_active').execute()
}
