import { EventEmitter } from 'node:events'
import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../db/schema.js'

/**
 * In-process wake-up of the checksum workers, sent once the transaction that queued a job has
 * committed (a look before the commit would not see the row). Other processes find the job by
 * polling (CHECKSUM_POLL_MS).
 */
export const checksumSignal = new EventEmitter()
checksumSignal.setMaxListeners(0)

/**
 * Asks for the md5 and CRC-32 of a blob, in the transaction that makes it a file's content: the
 * job is committed with the file, so a file without checksums always has a job that brings them.
 */
export async function queueChecksums(
  db: Kysely<Database> | Transaction<Database>,
  blobKeys: string[],
  now: number,
): Promise<void> {
  // Batches stay well under SQLite's parameter limit (two per row).
  for (let i = 0; i < blobKeys.length; i += 1000) {
    const batch = blobKeys.slice(i, i + 1000).map((blob_key) => ({ blob_key, created_at: now }))
    await db.insertInto('checksum_jobs').values(batch).execute()
  }
}

/** Wakes this process's checksum workers; call it after the commit that queued jobs. */
export function wakeChecksumWorkers(): void {
  checksumSignal.emit('queued')
}
