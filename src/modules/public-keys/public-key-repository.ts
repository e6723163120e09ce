import type { Kysely, Selectable } from 'kysely'
import type { ListRequest, ListSpec, Page } from '../../api/list-spec.js'
import { selectPage } from '../../db/list-sql.js'
import { Repository } from '../../db/repository.js'
import type { Database, PublicKeysTable, UsersTable } from '../../db/schema.js'

export type PublicKeyRow = Selectable<PublicKeysTable> & { username: string }

export const PUBLIC_KEY_LIST: ListSpec = {
  name: 'public_keys',
  idColumn: 'public_keys.id',
  sort: {},
  filter: {},
}

/** The SQL of the PublicKey resource. */
export class PublicKeyRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new PublicKeyRepository(db, this.dialect) as this
  }

  private rows(siteId: number) {
    return this.db
      .selectFrom('public_keys')
      .innerJoin('users', 'users.id', 'public_keys.user_id')
      .selectAll('public_keys')
      .select('users.username as username')
      .where('public_keys.site_id', '=', siteId)
  }

  page(siteId: number, userId: number | undefined, list: ListRequest): Promise<Page<PublicKeyRow>> {
    let q = this.rows(siteId)
    if (userId !== undefined) q = q.where('public_keys.user_id', '=', userId)
    return selectPage(q, list)
  }

  find(siteId: number, id: number): Promise<PublicKeyRow | undefined> {
    return this.rows(siteId).where('public_keys.id', '=', id).executeTakeFirst()
  }

  async insert(values: Omit<Selectable<PublicKeysTable>, 'id'>): Promise<number> {
    const row = await this.db
      .insertInto('public_keys')
      .values(values)
      .returning('id')
      .executeTakeFirstOrThrow()
    return row.id
  }

  async setTitle(id: number, title: string): Promise<void> {
    await this.db.updateTable('public_keys').set({ title }).where('id', '=', id).execute()
  }

  async remove(id: number): Promise<void> {
    await this.db.deleteFrom('public_keys').where('id', '=', id).execute()
  }

  /** The user a key (by its SHA-256 fingerprint) logs in as, if the name given is theirs. */
  async userForLogin(
    siteId: number,
    usernameLower: string,
    fingerprintSha256: string,
  ): Promise<{ keyId: number; user: Selectable<UsersTable> } | undefined> {
    const row = await this.db
      .selectFrom('public_keys')
      .innerJoin('users', 'users.id', 'public_keys.user_id')
      .selectAll('users')
      .select('public_keys.id as key_id')
      .where('public_keys.site_id', '=', siteId)
      .where('public_keys.fingerprint_sha256', '=', fingerprintSha256)
      .where('users.username_lower', '=', usernameLower)
      .executeTakeFirst()
    if (!row) return undefined
    const { key_id, ...user } = row
    return { keyId: key_id, user }
  }

  async touchLogin(id: number, now: number): Promise<void> {
    await this.db.updateTable('public_keys').set({ last_login_at: now }).where('id', '=', id).execute()
  }
}
