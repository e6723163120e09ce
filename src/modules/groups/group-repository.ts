import type { Insertable, Kysely, Selectable, Updateable } from 'kysely'
import type { ListRequest, Page } from '../../api/list-spec.js'
import { isForeignKeyViolation, isUniqueViolation } from '../../db/errors.js'
import { selectPage } from '../../db/list-sql.js'
import { Repository } from '../../db/repository.js'
import type { Database, GroupsTable } from '../../db/schema.js'

export type GroupRow = Selectable<GroupsTable>
export interface MemberRow {
  id: number
  group_id: number
  user_id: number
  admin: number
  username: string
  group_name: string
}

/** The groups and group_users tables. */
export class GroupRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new GroupRepository(db, this.dialect) as this
  }

  /** Groups; `memberOf` narrows to the groups that user belongs to. */
  page(siteId: number, memberOf: number | undefined, list: ListRequest): Promise<Page<GroupRow>> {
    let q = this.db.selectFrom('groups').selectAll('groups').where('groups.site_id', '=', siteId)
    if (memberOf !== undefined)
      q = q.where('groups.id', 'in', (eb) =>
        eb
          .selectFrom('group_users')
          .select('group_users.group_id')
          .where('group_users.user_id', '=', memberOf),
      )
    return selectPage(q, list)
  }

  find(siteId: number, id: number): Promise<GroupRow | undefined> {
    return this.db
      .selectFrom('groups')
      .selectAll()
      .where('site_id', '=', siteId)
      .where('id', '=', id)
      .executeTakeFirst()
  }

  findByIdOrName(
    siteId: number,
    id: number | undefined,
    name: string | undefined,
  ): Promise<GroupRow | undefined> {
    let q = this.db.selectFrom('groups').selectAll().where('site_id', '=', siteId)
    if (id !== undefined) q = q.where('id', '=', id)
    if (name !== undefined && name !== '') q = q.where('name_lower', '=', name.toLowerCase())
    return q.executeTakeFirst()
  }

  /** Inserts a group; a name already taken (in any case) is `taken`. */
  async insert(values: Insertable<GroupsTable>, taken: () => Error): Promise<GroupRow> {
    try {
      return await this.db.insertInto('groups').values(values).returningAll().executeTakeFirstOrThrow()
    } catch (err) {
      if (isUniqueViolation(err)) throw taken()
      throw err
    }
  }

  async update(id: number, patch: Updateable<GroupsTable>, taken: () => Error): Promise<GroupRow> {
    try {
      await this.db.updateTable('groups').set(patch).where('id', '=', id).execute()
    } catch (err) {
      if (isUniqueViolation(err)) throw taken()
      throw err
    }
    return this.db.selectFrom('groups').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  }

  /** Deletes the group; its memberships and folder permissions go with it (foreign keys). */
  async delete(id: number): Promise<void> {
    await this.db.deleteFrom('groups').where('id', '=', id).execute()
  }

  // ---------- memberships ----------

  private withNames(siteId: number) {
    return this.db
      .selectFrom('group_users')
      .innerJoin('users', 'users.id', 'group_users.user_id')
      .innerJoin('groups', 'groups.id', 'group_users.group_id')
      .select([
        'group_users.id',
        'group_users.group_id',
        'group_users.user_id',
        'group_users.admin',
        'users.username as username',
        'groups.name as group_name',
      ])
      .where('group_users.site_id', '=', siteId)
  }

  /** Memberships of some groups (all: undefined), optionally of one user and one group. */
  memberPage(
    siteId: number,
    filter: { groupId?: number | undefined; userId?: number | undefined; visibleTo?: number | undefined },
    list: ListRequest,
  ): Promise<Page<MemberRow>> {
    let q = this.withNames(siteId)
    if (filter.groupId !== undefined) q = q.where('group_users.group_id', '=', filter.groupId)
    if (filter.userId !== undefined) q = q.where('group_users.user_id', '=', filter.userId)
    const viewer = filter.visibleTo
    if (viewer !== undefined)
      q = q.where((eb) =>
        eb.or([
          eb('group_users.user_id', '=', viewer),
          eb(
            'group_users.group_id',
            'in',
            eb
              .selectFrom('group_users as mine')
              .select('mine.group_id')
              .where('mine.user_id', '=', viewer)
              .where('mine.admin', '=', 1),
          ),
        ]),
      )
    return selectPage(q, list)
  }

  /** Every membership of the group, in id order. */
  members(siteId: number, groupId: number): Promise<MemberRow[]> {
    return this.withNames(siteId)
      .where('group_users.group_id', '=', groupId)
      .orderBy('group_users.id')
      .execute()
  }

  /** The members of several groups at once (a page of groups). */
  membersOf(siteId: number, groupIds: number[]): Promise<MemberRow[]> {
    if (groupIds.length === 0) return Promise.resolve([])
    return this.withNames(siteId)
      .where('group_users.group_id', 'in', groupIds)
      .orderBy('group_users.id')
      .execute()
  }

  findMember(siteId: number, id: number): Promise<MemberRow | undefined> {
    return this.withNames(siteId).where('group_users.id', '=', id).executeTakeFirst()
  }

  membership(groupId: number, userId: number): Promise<{ id: number; admin: number } | undefined> {
    return this.db
      .selectFrom('group_users')
      .select(['id', 'admin'])
      .where('group_id', '=', groupId)
      .where('user_id', '=', userId)
      .executeTakeFirst()
  }

  /**
   * Adds a member; an existing membership is `duplicate`, a user or group deleted meanwhile
   * `gone`.
   */
  async addMember(
    siteId: number,
    groupId: number,
    userId: number,
    admin: boolean,
    now: number,
    duplicate: () => Error,
    gone: () => Error,
  ): Promise<number> {
    try {
      const row = await this.db
        .insertInto('group_users')
        .values({
          site_id: siteId,
          group_id: groupId,
          user_id: userId,
          admin: admin ? 1 : 0,
          created_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow()
      return row.id
    } catch (err) {
      if (isUniqueViolation(err)) throw duplicate()
      if (isForeignKeyViolation(err)) throw gone()
      throw err
    }
  }

  async setAdmin(id: number, admin: boolean): Promise<void> {
    await this.db
      .updateTable('group_users')
      .set({ admin: admin ? 1 : 0 })
      .where('id', '=', id)
      .execute()
  }

  async removeMember(id: number): Promise<void> {
    await this.db.deleteFrom('group_users').where('id', '=', id).execute()
  }

  /** Of these user ids, those that are users of the site. */
  async existingUsers(siteId: number, ids: number[]): Promise<Map<number, string>> {
    if (ids.length === 0) return new Map()
    const rows = await this.db
      .selectFrom('users')
      .select(['id', 'username'])
      .where('site_id', '=', siteId)
      .where('id', 'in', ids)
      .execute()
    return new Map(rows.map((r) => [r.id, r.username]))
  }
}
