import type { Insertable } from 'kysely'
import type { UploadsTable } from '../../db/schema.js'
import type { Db } from './file-repository.js'

/**
 * The uploads and upload_parts tables: an upload in progress (its ref, path and options) and the
 * parts staged for it so far. Each statement runs on the connection or transaction it is given.
 */

export async function insertUpload(db: Db, upload: Insertable<UploadsTable>): Promise<void> {
  await db.insertInto('uploads').values(upload).execute()
}

/** An upload by its ref alone (a part's signed link names no site). */
export function findUploadByRef(db: Db, ref: string) {
  return db
    .selectFrom('uploads')
    .select(['id', 'site_id', 'expires_at', 'expiry_seconds'])
    .where('ref', '=', ref)
    .executeTakeFirst()
}

export function findSiteUpload(db: Db, siteId: number, ref: string) {
  return db
    .selectFrom('uploads')
    .selectAll()
    .where('site_id', '=', siteId)
    .where('ref', '=', ref)
    .executeTakeFirst()
}

export async function uploadExists(db: Db, id: number): Promise<boolean> {
  return (await db.selectFrom('uploads').select('id').where('id', '=', id).executeTakeFirst()) !== undefined
}

/** Pushes back the upload's expiry; false when it is gone (ended or abandoned). */
export async function extendUpload(db: Db, id: number, expiresAt: number): Promise<boolean> {
  const touched = await db
    .updateTable('uploads')
    .set({ expires_at: expiresAt })
    .where('id', '=', id)
    .executeTakeFirst()
  return Number(touched.numUpdatedRows) !== 0
}

/** Records a stored part, replacing an earlier one with the same number. */
export async function upsertPart(
  db: Db,
  uploadId: number,
  part: number,
  size: number,
  now: number,
): Promise<void> {
  await db
    .insertInto('upload_parts')
    .values({ upload_id: uploadId, part_number: part, size, created_at: now })
    .onConflict((oc) => oc.columns(['upload_id', 'part_number']).doUpdateSet({ size, created_at: now }))
    .execute()
}

/** The upload's parts in order, with the size each had when it was stored. */
export function partsOf(db: Db, uploadId: number) {
  return db
    .selectFrom('upload_parts')
    .select(['part_number', 'size'])
    .where('upload_id', '=', uploadId)
    .orderBy('part_number')
    .execute()
}

/** Deletes the upload; false when another `end` (or the janitor) deleted it first. */
export async function deleteUpload(db: Db, id: number): Promise<boolean> {
  const deleted = await db.deleteFrom('uploads').where('id', '=', id).executeTakeFirst()
  return Number(deleted.numDeletedRows) !== 0
}

export async function deleteParts(db: Db, uploadId: number): Promise<void> {
  await db.deleteFrom('upload_parts').where('upload_id', '=', uploadId).execute()
}
