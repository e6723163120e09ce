import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../db/schema.js'

/**
 * The blob deletion queue (`blob_garbage`), which the janitor empties: a blob's key is queued in
 * the transaction that stops using it, or before a new blob is written under it, and taken off in
 * the transaction that makes the new blob someone's (a file's content, an export's file).
 */
type Db = Kysely<Database> | Transaction<Database>

/** Queues a blob for deletion once this transaction commits (the janitor deletes it). */
export async function queueBlobDeletion(trx: Db, blobKey: string, now: number): Promise<void> {
  await queueBlobDeletions(trx, [blobKey], now)
}

/** The same for several blobs at once. */
export async function queueBlobDeletions(trx: Db, blobKeys: string[], now: number): Promise<void> {
  if (blobKeys.length === 0) return
  await trx
    .insertInto('blob_garbage')
    .values(blobKeys.map((blob_key) => ({ blob_key, created_at: now })))
    .execute()
}

/**
 * Queues a blob just written for deletion, until the transaction that makes it a file's content
 * takes it off the queue (unqueueBlobs): a failure or crash in between leaves nothing behind.
 */
export async function queueNewBlob(db: Db, blobKey: string, now: number): Promise<number> {
  const row = await db
    .insertInto('blob_garbage')
    .values({ blob_key: blobKey, created_at: now })
    .returning('id')
    .executeTakeFirstOrThrow()
  return row.id
}

/** Restarts the janitor's grace period of queued blobs still about to be used; how many were still queued. */
export async function requeueBlobs(db: Db, garbageIds: number[], now: number): Promise<number> {
  const res = await db
    .updateTable('blob_garbage')
    .set({ created_at: now })
    .where('id', 'in', garbageIds)
    .executeTakeFirst()
  return Number(res.numUpdatedRows)
}

/**
 * Takes a blob that became a file's content off the deletion queue for good: every queue row of
 * its key, those of earlier attempts to end the same upload too, where the store fixed the key
 * (S3 direct mode). Returns the ids taken off, so the caller can tell whether its own row was
 * still there (gone: the janitor took the blob).
 */
export async function unqueueBlobKey(db: Db, blobKey: string): Promise<number[]> {
  const rows = await db.deleteFrom('blob_garbage').where('blob_key', '=', blobKey).returning('id').execute()
  return rows.map((r) => r.id)
}

/** Takes blobs off the deletion queue; returns how many were still on it. */
export async function unqueueBlobs(db: Db, garbageIds: number[]): Promise<number> {
  const res = await db.deleteFrom('blob_garbage').where('id', 'in', garbageIds).executeTakeFirst()
  return Number(res.numDeletedRows)
}
