import type { Insertable, Kysely, Selectable } from 'kysely'
import { Repository } from '../../db/repository.js'
import type { Database, SitesTable } from '../../db/schema.js'

export type SiteRow = Selectable<SitesTable>

/** The sites table (one site today). */
export class SiteRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new SiteRepository(db, this.dialect) as this
  }

  /** The first site created. */
  first(): Promise<SiteRow | undefined> {
    return this.db.selectFrom('sites').selectAll().orderBy('id').limit(1).executeTakeFirst()
  }

  find(id: number): Promise<SiteRow> {
    return this.db.selectFrom('sites').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  }

  insert(values: Insertable<SitesTable>): Promise<SiteRow> {
    return this.db.insertInto('sites').values(values).returningAll().executeTakeFirstOrThrow()
  }

  async rename(id: number, name: string): Promise<void> {
    await this.db.updateTable('sites').set({ name }).where('id', '=', id).execute()
  }

  /** The billing contact's fields given (`contact_name`, `phone`, `email`). */
  async updateContact(
    id: number,
    patch: Partial<Pick<SiteRow, 'contact_name' | 'phone' | 'email'>>,
  ): Promise<void> {
    await this.db.updateTable('sites').set(patch).where('id', '=', id).execute()
  }

  async signingSecret(id: number): Promise<string> {
    const site = await this.db
      .selectFrom('sites')
      .select('signing_secret')
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
    return site.signing_secret
  }
}
