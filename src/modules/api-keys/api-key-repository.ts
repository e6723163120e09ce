import type { Insertable, Kysely, Selectable, Updateable } from 'kysely'
import type { ListRequest, Page } from '../../api/list-spec.js'
import { selectPage } from '../../db/list-sql.js'
import { Repository } from '../../db/repository.js'
import type { ApiKeysTable, Database } from '../../db/schema.js'

export type ApiKeyRow = Selectable<ApiKeysTable>
/** A key with its owner's username, which its label shows. */
export type ApiKeyWithOwner = ApiKeyRow & { username: string | null }

/** Whose keys a list shows: everyone's, a user's, or the site-wide ones (no user). */
export type KeyOwnerFilter = number | 'site-wide' | undefined

/** The api_keys table. */
export class ApiKeyRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new ApiKeyRepository(db, this.dialect) as this
  }

  private withOwner(siteId: number) {
    return this.db
      .selectFrom('api_keys')
      .leftJoin('users', 'users.id', 'api_keys.user_id')
      .selectAll('api_keys')
      .select('users.username as username')
      .where('api_keys.site_id', '=', siteId)
  }

  page(siteId: number, owner: KeyOwnerFilter, list: ListRequest): Promise<Page<ApiKeyWithOwner>> {
    let q = this.withOwner(siteId)
    if (owner === 'site-wide') q = q.where('api_keys.user_id', 'is', null)
    else if (owner !== undefined) q = q.where('api_keys.user_id', '=', owner)
    return selectPage(q, list)
  }

  find(siteId: number, id: number): Promise<ApiKeyWithOwner | undefined> {
    return this.withOwner(siteId).where('api_keys.id', '=', id).executeTakeFirst()
  }

  /** A key known to exist (read back after a change in the same transaction). */
  get(siteId: number, id: number): Promise<ApiKeyWithOwner> {
    return this.withOwner(siteId).where('api_keys.id', '=', id).executeTakeFirstOrThrow()
  }

  /** The key whose secret hashes to `hash` (authentication). */
  findByHash(hash: string): Promise<ApiKeyRow | undefined> {
    return this.db.selectFrom('api_keys').selectAll().where('key_hash', '=', hash).executeTakeFirst()
  }

  insert(values: Insertable<ApiKeysTable>): Promise<ApiKeyRow> {
    return this.db.insertInto('api_keys').values(values).returningAll().executeTakeFirstOrThrow()
  }

  async update(id: number, patch: Updateable<ApiKeysTable>): Promise<void> {
    await this.db.updateTable('api_keys').set(patch).where('id', '=', id).execute()
  }

  async delete(id: number): Promise<void> {
    await this.db.deleteFrom('api_keys').where('id', '=', id).execute()
  }

  /**
   * Sets last_use_at unless it is more recent than `staleBefore`: of concurrent requests only one
   * writes.
   */
  async touchLastUse(id: number, now: number, staleBefore: number): Promise<void> {
    await this.db
      .updateTable('api_keys')
      .set({ last_use_at: now })
      .where('id', '=', id)
      .where((eb) => eb.or([eb('last_use_at', 'is', null), eb('last_use_at', '<=', staleBefore)]))
      .execute()
  }
}
