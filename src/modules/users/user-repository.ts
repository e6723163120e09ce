import type { Insertable, Kysely, Updateable } from 'kysely'
import { ApiError } from '../../api/errors.js'
import type { ListRequest, Page } from '../../api/list-spec.js'
import { isUniqueViolation } from '../../db/errors.js'
import { selectPage } from '../../db/list-sql.js'
import { Repository } from '../../db/repository.js'
import type { Database, UsersTable } from '../../db/schema.js'
import type { UserRow } from '../../identity/principal.js'

/** Usernames are unique per site whatever their case: the answer to a second one. */
export const usernameTaken = () => ApiError.modelSave({ username: ['has already been taken'] })

/** The users table. */
export class UserRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new UserRepository(db, this.dialect) as this
  }

  /** A page of the site's users (only `onlyId` when given). */
  page(siteId: number, onlyId: number | null, list: ListRequest): Promise<Page<UserRow>> {
    let q = this.db.selectFrom('users').selectAll('users').where('users.site_id', '=', siteId)
    if (onlyId !== null) q = q.where('users.id', '=', onlyId)
    return selectPage(q, list)
  }

  find(siteId: number, id: number): Promise<UserRow | undefined> {
    return this.db
      .selectFrom('users')
      .selectAll()
      .where('site_id', '=', siteId)
      .where('id', '=', id)
      .executeTakeFirst()
  }

  /** By id only: an API key's owner, whose site is the key's. */
  findById(id: number): Promise<UserRow | undefined> {
    return this.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst()
  }

  /** The user of a name, matched without regard to case. */
  findByUsername(siteId: number, username: string): Promise<UserRow | undefined> {
    return this.db
      .selectFrom('users')
      .selectAll()
      .where('site_id', '=', siteId)
      .where('username_lower', '=', username.toLowerCase())
      .executeTakeFirst()
  }

  /** A user named by id, by username, or both (then both must match). */
  findByIdOrName(
    siteId: number,
    id: number | undefined,
    username: string | undefined,
  ): Promise<{ id: number; username: string } | undefined> {
    let q = this.db.selectFrom('users').select(['id', 'username']).where('site_id', '=', siteId)
    if (id !== undefined) q = q.where('id', '=', id)
    if (username !== undefined && username !== '') q = q.where('username_lower', '=', username.toLowerCase())
    return q.executeTakeFirst()
  }

  /** Which of these users have a confirmed two-factor method. */
  async withTwoFactor(userIds: number[]): Promise<Set<number>> {
    if (userIds.length === 0) return new Set()
    const rows = await this.db
      .selectFrom('two_factor_methods')
      .select('user_id')
      .distinct()
      .where('user_id', 'in', userIds)
      .where('confirmed_at', 'is not', null)
      .execute()
    return new Set(rows.map((r) => r.user_id))
  }

  async usernameExists(siteId: number, username: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('users')
      .select('id')
      .where('site_id', '=', siteId)
      .where('username_lower', '=', username.toLowerCase())
      .executeTakeFirst()
    return row !== undefined
  }

  async anyInSite(siteId: number): Promise<boolean> {
    const row = await this.db
      .selectFrom('users')
      .select('id')
      .where('site_id', '=', siteId)
      .limit(1)
      .executeTakeFirst()
    return row !== undefined
  }

  async insert(values: Insertable<UsersTable>): Promise<UserRow> {
    try {
      return await this.db.insertInto('users').values(values).returningAll().executeTakeFirstOrThrow()
    } catch (err) {
      if (isUniqueViolation(err)) throw usernameTaken()
      throw err
    }
  }

  async update(id: number, patch: Updateable<UsersTable>): Promise<UserRow> {
    try {
      await this.db.updateTable('users').set(patch).where('id', '=', id).execute()
    } catch (err) {
      if (isUniqueViolation(err)) throw usernameTaken()
      throw err
    }
    return this.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  }

  async touchLogin(id: number, now: number): Promise<void> {
    await this.db.updateTable('users').set({ last_login_at: now }).where('id', '=', id).execute()
  }

  async delete(id: number): Promise<void> {
    await this.db.deleteFrom('users').where('id', '=', id).execute()
  }

  /**
   * A site always keeps an enabled site administrator: refuses a change that takes the last one
   * away (demoted, disabled or deleted). Runs in the change's own transaction. Where the database
   * has row locks the enabled administrators' rows are locked first, so of two concurrent changes
   * to the last two, the second waits, then sees the first one's result (a locking read re-checks
   * rows changed meanwhile) and is refused; SQLite runs one write transaction at a time.
   */
  async keepAnAdministrator(siteId: number, userId: number, refusal: ApiError): Promise<void> {
    let q = this.db
      .selectFrom('users')
      .select('id')
      .where('site_id', '=', siteId)
      .where('site_admin', '=', 1)
      .where('disabled', '=', 0)
      .orderBy('id')
    if (this.dialect.rowLocks) q = q.forUpdate()
    const admins = (await q.execute()).map((r) => r.id)
    if (admins.length === 1 && admins[0] === userId) throw refusal
  }
}
