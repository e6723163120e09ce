import type { Kysely } from 'kysely'

/**
 * What several Wharf processes on one database must agree on beyond the site's rows:
 * - `server_keys`: the server's own keys (the SFTP host keys, the FTP certificate made when none is
 *   given), one row per set, so that every node behind a load balancer presents the same ones. A
 *   set is written once, by whichever node gets there first (insert if absent, then read back).
 * - `job_leases`: one row per background job that only one process may run at a time (the blob
 *   janitor), held with a lease that runs out if its holder dies.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('server_keys')
    .addColumn('name', 'text', (c) => c.primaryKey())
    // JSON object: the set's files by name (PEM or OpenSSH text), as they would be on disk.
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createTable('job_leases')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'bigint')
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('job_leases').execute()
  await db.schema.dropTable('server_keys').execute()
}
