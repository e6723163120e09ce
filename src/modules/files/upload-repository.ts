import { CompiledQuery, type Insertable, type Kysely, type Selectable } from 'kysely'
import { Repository } from '../../db/repository.js'
import type { Database, UploadsTable } from '../../db/schema.js'
import type { FileRepository } from './file-repository.js'

export type UploadRow = Selectable<UploadsTable>

/** The repositories an upload writes to: the file it becomes, and the upload itself. */
export interface UploadRepositories {
  files: FileRepository
  uploads: UploadRepository
}

/**
 * The uploads and upload_parts tables: an upload in progress (its ref, path and options) and the
 * parts staged for it so far.
 */
export class UploadRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new UploadRepository(db, this.dialect) as this
  }

  insert(upload: Insertable<UploadsTable>): Promise<UploadRow> {
    return this.db.insertInto('uploads').values(upload).returningAll().executeTakeFirstOrThrow()
  }

  /** An upload by its ref alone (a part's signed link names no site). */
  findByRef(ref: string) {
    return this.db
      .selectFrom('uploads')
      .select(['id', 'site_id', 'expires_at', 'expiry_seconds'])
      .where('ref', '=', ref)
      .executeTakeFirst()
  }

  findOfSite(siteId: number, ref: string): Promise<UploadRow | undefined> {
    return this.db
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
  findOfSiteWithTarget(siteId: number, ref: string, pathLower: string) {
    return this.db
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

  async exists(id: number): Promise<boolean> {
    return (
      (await this.db.selectFrom('uploads').select('id').where('id', '=', id).executeTakeFirst()) !== undefined
    )
  }

  /**
   * Takes the upload's row lock (PostgreSQL's FOR UPDATE), for the rest of the transaction this
   * repository is bound to; false when the upload is gone.
   */
  async lock(id: number): Promise<boolean> {
    const row = await this.db
      .selectFrom('uploads')
      .select('id')
      .where('id', '=', id)
      .forUpdate()
      .executeTakeFirst()
    return row !== undefined
  }

  /** Pushes back the upload's expiry; false when it is gone (ended or abandoned). */
  async extend(id: number, expiresAt: number): Promise<boolean> {
    const touched = await this.db
      .updateTable('uploads')
      .set({ expires_at: expiresAt })
      .where('id', '=', id)
      .executeTakeFirst()
    return Number(touched.numUpdatedRows) !== 0
  }

  /** Records a stored part, replacing an earlier one with the same number. */
  async upsertPart(uploadId: number, part: number, size: number, now: number): Promise<void> {
    await this.db
      .insertInto('upload_parts')
      .values({ upload_id: uploadId, part_number: part, size, created_at: now })
      .onConflict((oc) => oc.columns(['upload_id', 'part_number']).doUpdateSet({ size, created_at: now }))
      .execute()
  }

  /**
   * A stored part recorded and its upload's expiry pushed back, in one transaction; false when
   * the upload is gone (ended or abandoned), and then nothing is recorded. The upload is touched
   * first, which also makes a concurrent `end` wait for this part (PostgreSQL's row lock). Where
   * a WITH may hold an UPDATE (PostgreSQL) both writes are one statement, atomic on its own: one
   * round trip per part instead of four (BEGIN, two statements, COMMIT), and one commit as before.
   */
  async recordPart(part: {
    uploadId: number
    number: number
    size: number
    now: number
    expiresAt: number
  }): Promise<boolean> {
    if (this.dialect.writableCte) {
      const { rows } = await this.db.executeQuery(
        CompiledQuery.raw(PG_RECORD_PART, [part.expiresAt, part.uploadId, part.number, part.size, part.now]),
      )
      return rows.length !== 0
    }
    return this.transaction(async (tx) => {
      if (!(await tx.extend(part.uploadId, part.expiresAt))) return false
      await tx.upsertPart(part.uploadId, part.number, part.size, part.now)
      return true
    })
  }

  /** The upload's parts in order, with the size each had when it was stored. */
  partsOf(uploadId: number) {
    return this.db
      .selectFrom('upload_parts')
      .select(['part_number', 'size'])
      .where('upload_id', '=', uploadId)
      .orderBy('part_number')
      .execute()
  }

  /** Deletes the upload; false when another `end` (or the janitor) deleted it first. */
  async delete(id: number): Promise<boolean> {
    const deleted = await this.db.deleteFrom('uploads').where('id', '=', id).executeTakeFirst()
    return Number(deleted.numDeletedRows) !== 0
  }

  async deleteParts(uploadId: number): Promise<void> {
    await this.db.deleteFrom('upload_parts').where('upload_id', '=', uploadId).execute()
  }
}

// The casts type the parameters, which a SELECT list alone would leave as text. A data-modifying
// WITH runs before the insert reads its rows: no upload row, no part row.
const PG_RECORD_PART = `with touched as (update uploads set expires_at = $1 where id = $2 returning id)
insert into upload_parts (upload_id, part_number, size, created_at)
select id, cast($3 as integer), cast($4 as bigint), cast($5 as bigint) from touched
on conflict (upload_id, part_number) do update set size = excluded.size, created_at = excluded.created_at
returning upload_id`
