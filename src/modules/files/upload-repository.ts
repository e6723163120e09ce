import { CompiledQuery, type Insertable, type Kysely, type Selectable } from 'kysely'
import type { SqlDialect } from '../../db/dialects/dialect.js'
import type { Database, UploadsTable } from '../../db/schema.js'
import type { Db } from './file-repository.js'

/**
 * The uploads and upload_parts tables: an upload in progress (its ref, path and options) and the
 * parts staged for it so far. Each statement runs on the connection or transaction it is given.
 */

export function insertUpload(db: Db, upload: Insertable<UploadsTable>): Promise<Selectable<UploadsTable>> {
  return db.insertInto('uploads').values(upload).returningAll().executeTakeFirstOrThrow()
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

/**
 * The site's upload by ref, and what is at `pathLower` now (`target_type`: file, directory or
 * null), in one read: asking for a part's URL needs both, once per part.
 */
export function findSiteUploadAndTarget(db: Db, siteId: number, ref: string, pathLower: string) {
  return db
    .selectFrom('uploads')
    .selectAll('uploads')
    .select((eb) =>
      eb
        .selectFrom('files')
        .select('files.type')
        .where('files.site_id', '=', siteId)
        .where('files.path_lower', '=', pathLower)
        .as('target_type'),
    )
    .where('uploads.site_id', '=', siteId)
    .where('uploads.ref', '=', ref)
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

/**
 * A stored part recorded and its upload's expiry pushed back, in one transaction; false when the
 * upload is gone (ended or abandoned), and then nothing is recorded. The upload is touched first,
 * which also makes a concurrent `end` wait for this part (PostgreSQL's row lock). Where a WITH may
 * hold an UPDATE (PostgreSQL) both writes are one statement, atomic on its own: one round trip
 * per part instead of four (BEGIN, two statements, COMMIT), and one commit as before.
 */
export async function recordPart(
  db: Kysely<Database>,
  dialect: SqlDialect,
  part: { uploadId: number; number: number; size: number; now: number; expiresAt: number },
): Promise<boolean> {
  if (dialect.writableCte) {
    const { rows } = await db.executeQuery(
      CompiledQuery.raw(PG_RECORD_PART, [part.expiresAt, part.uploadId, part.number, part.size, part.now]),
    )
    return rows.length !== 0
  }
  return db.transaction().execute(async (trx) => {
    if (!(await extendUpload(trx, part.uploadId, part.expiresAt))) return false
    await upsertPart(trx, part.uploadId, part.number, part.size, part.now)
    return true
  })
}

// The casts type the parameters, which a SELECT list alone would leave as text. A data-modifying
// WITH runs before the insert reads its rows: no upload row, no part row.
const PG_RECORD_PART = `with touched as (update uploads set expires_at = $1 where id = $2 returning id)
insert into upload_parts (upload_id, part_number, size, created_at)
select id, cast($3 as integer), cast($4 as bigint), cast($5 as bigint) from touched
on conflict (upload_id, part_number) do update set size = excluded.size, created_at = excluded.created_at
returning upload_id`

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
