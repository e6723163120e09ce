import type { Insertable, Kysely, Selectable } from 'kysely'
import { Repository } from '../../db/repository.js'
import type { Database, ExportsTable } from '../../db/schema.js'

export type ExportRow = Selectable<ExportsTable>

/**
 * The exports table as the API reads and creates it (the worker that builds exports and the
 * retention that deletes them keep their own statements in src/exports/), and the one fact about
 * a user an export needs: whether they are a site admin.
 */
export class ExportRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new ExportRepository(db, this.dialect) as this
  }

  insert(values: Insertable<ExportsTable>): Promise<ExportRow> {
    return this.db.insertInto('exports').values(values).returningAll().executeTakeFirstOrThrow()
  }

  /** A site's export of one kind. */
  find(siteId: number, id: number, kind: ExportsTable['kind']): Promise<ExportRow | undefined> {
    return this.db
      .selectFrom('exports')
      .selectAll()
      .where('site_id', '=', siteId)
      .where('id', '=', id)
      .where('kind', '=', kind)
      .executeTakeFirst()
  }

  /** What serving an export's CSV needs, by id alone (a results link names the site in its signature). */
  findForLink(id: number) {
    return this.db
      .selectFrom('exports')
      .select(['site_id', 'kind', 'status', 'blob_key', 'result_bytes'])
      .where('id', '=', id)
      .executeTakeFirst()
  }
}
