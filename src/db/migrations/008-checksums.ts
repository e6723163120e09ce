import { type Kysely, PostgresAdapter } from 'kysely'

/**
 * Checksums computed after the upload rather than in it: each row asks for the md5 and CRC-32
 * of one blob, written in the transaction that makes the blob a file's content. A worker claims
 * it with a lease, reads the blob once, writes the checksums to the files that still use that
 * blob, and deletes the row; a crash leaves the row for the next worker.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const isPg = db.getExecutor().adapter instanceof PostgresAdapter
  const idType = isPg ? 'bigserial' : 'integer'
  const auto = (c: any) => (isPg ? c.primaryKey() : c.primaryKey().autoIncrement())
  await db.schema
    .createTable('checksum_jobs')
    .addColumn('id', idType, auto)
    .addColumn('blob_key', 'text', (c) => c.notNull())
    // How many times a worker has claimed it (for the log: a blob that cannot be read is retried).
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('checksum_jobs').execute()
}
