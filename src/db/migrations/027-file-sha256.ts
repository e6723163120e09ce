import type { Kysely } from 'kysely'

/**
 * The SHA-256 of a file's bytes, computed by the checksum job in the same read as its md5 and
 * CRC-32 (null until then, and for files whose checksums were computed before this migration:
 * reading every stored byte again at an upgrade is not done). A notification to a file-aware
 * endpoint keeps the SHA-256 of its version once known (`file_sha256`), so that a retry after the
 * file was replaced still reports it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('files').addColumn('sha256', 'text').execute()
  await db.schema.alterTable('webhook_notifications').addColumn('file_sha256', 'text').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_notifications').dropColumn('file_sha256').execute()
  await db.schema.alterTable('files').dropColumn('sha256').execute()
}
