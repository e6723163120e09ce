import type { Kysely } from 'kysely'
import { ERRORS } from '../../api/error-factories.js'
import { ApiError, type ModelErrors } from '../../api/errors.js'
import { mapPage, type Page } from '../../api/list-spec.js'
import type { Database } from '../../db/schema.js'
import type { IdentityCache } from '../../identity/identity-cache.js'
import { isSiteAdmin, type Principal, requireSiteAdmin } from '../../identity/principal.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import { checkAllowedIps } from '../access/allowed-ips.js'
import { contextOf, recordAction } from '../actions/action-recorder.js'
import { readListRequest } from '../list-request.js'
import {
  GROUP_LIST,
  GROUP_USER_LIST,
  type GroupInput,
  type GroupJson,
  type GroupUserInput,
  type GroupUserJson,
  parseIds,
  toGroupJson,
  toGroupUserJson,
} from './group-model.js'
import type { GroupRepository, GroupRow, MemberRow } from './group-repository.js'

/**
 * What else users get when they become members, in that change's transaction (the folders of
 * `create_user_folders` behaviors limited to the group): given to the service, so that groups
 * never import behaviors.
 */
export interface NewMemberFolders {
  forNewMembers(
    db: Kysely<Database>,
    p: Principal,
    groupId: number,
    userIds: readonly number[],
    now: number,
  ): Promise<void>
}

const groupNotFound = (id: number) => ERRORS.groupNotFound(`Group ${id} not found`)
const nameTaken = () => ApiError.modelSave({ name: ['has already been taken'] })
const flag = (v: boolean | undefined) => (v === undefined ? undefined : v ? 1 : 0)

/**
 * Groups and their members. Site admins manage everything; a group's administrators
 * (GroupUser.admin) add, change and remove its members; other users see the groups they
 * belong to. Folder permissions of groups are PermissionService's.
 */
export class GroupService {
  constructor(
    private readonly groups: GroupRepository,
    private readonly secrets: SiteSecrets,
    private readonly now: () => number = Date.now,
    /** The folders `create_user_folders` behaviors of a group make for its new members. */
    private readonly memberFolders?: NewMemberFolders,
    /** Forgotten on every change: a group's rights and addresses limit its members' logins. */
    private readonly identities?: IdentityCache,
  ) {}

  /** GET /groups: site admins see every group, anyone else the groups they belong to. */
  async list(p: Principal, query: Record<string, unknown>): Promise<Page<GroupJson>> {
    const memberOf = isSiteAdmin(p) ? undefined : p.user!.id
    const list = await readListRequest(this.secrets, p.siteId, GROUP_LIST, query, {})
    const page = await this.groups.page(p.siteId, memberOf, list)
    const members = await this.groups.membersOf(
      p.siteId,
      page.items.map((g) => g.id),
    )
    return mapPage(page, (g) =>
      toGroupJson(
        g,
        members.filter((m) => m.group_id === g.id),
      ),
    )
  }

  async get(p: Principal, id: number): Promise<GroupJson> {
    const group = await this.visible(p, id)
    return toGroupJson(group, await this.groups.members(p.siteId, id))
  }

  /** POST /groups: site admins only. */
  async create(p: Principal, input: GroupInput): Promise<GroupJson> {
    requireSiteAdmin(p)
    const name = input.name?.trim() ?? ''
    if (name === '') throw ApiError.modelSave({ name: ["can't be blank"] })
    const allowedIps = groupAllowedIps(input)
    const wanted = await this.wantedMembers(p.siteId, input)
    const now = this.now()
    const id = await this.groups.transaction(async (tx) => {
      const row = await tx.insert(
        {
          site_id: p.siteId,
          name,
          name_lower: name.toLowerCase(),
          notes: input.notes ?? null,
          allowed_ips: allowedIps ?? null,
          ftp_permission: flag(input.ftp_permission) ?? 1,
          sftp_permission: flag(input.sftp_permission) ?? 1,
          dav_permission: flag(input.dav_permission) ?? 1,
          restapi_permission: flag(input.restapi_permission) ?? 1,
          created_at: now,
          updated_at: now,
        },
        nameTaken,
      )
      await this.applyMembers(tx, p, row.id, [], wanted, now)
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'group_create',
          display: `Created group ${name}`,
          targets: [{ type: 'group', id: row.id, name }],
        },
        now,
      )
      return row.id
    })
    this.identities?.clear()
    return this.get(p, id)
  }

  /** PATCH /groups/{id}: site admins only (group admins change members through /group_users). */
  async update(p: Principal, id: number, input: GroupInput): Promise<GroupJson> {
    requireSiteAdmin(p)
    const group = await this.visible(p, id)
    let name: string | undefined
    if (input.name !== undefined) {
      name = input.name.trim()
      if (name === '') throw ApiError.modelSave({ name: ["can't be blank"] })
    }
    const allowedIps = groupAllowedIps(input)
    const wanted = await this.wantedMembers(p.siteId, input)
    const now = this.now()
    await this.groups.transaction(async (tx) => {
      await tx.update(
        id,
        {
          ...(name !== undefined ? { name, name_lower: name.toLowerCase() } : {}),
          ...(input.notes !== undefined ? { notes: input.notes } : {}),
          ...(allowedIps !== undefined ? { allowed_ips: allowedIps } : {}),
          ...(input.ftp_permission !== undefined ? { ftp_permission: flag(input.ftp_permission)! } : {}),
          ...(input.sftp_permission !== undefined ? { sftp_permission: flag(input.sftp_permission)! } : {}),
          ...(input.dav_permission !== undefined ? { dav_permission: flag(input.dav_permission)! } : {}),
          ...(input.restapi_permission !== undefined
            ? { restapi_permission: flag(input.restapi_permission)! }
            : {}),
          updated_at: now,
        },
        nameTaken,
      )
      const current = await tx.members(p.siteId, id)
      await this.applyMembers(tx, p, id, current, wanted, now)
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'group_update',
          display: `Updated group ${name ?? group.name}`,
          targets: [{ type: 'group', id, name: name ?? group.name }],
        },
        now,
      )
    })
    this.identities?.clear()
    return this.get(p, id)
  }

  /** DELETE /groups/{id}: site admins only; the group's memberships and permissions go too. */
  async remove(p: Principal, id: number): Promise<void> {
    requireSiteAdmin(p)
    const group = await this.visible(p, id)
    const now = this.now()
    await this.groups.transaction(async (tx) => {
      await tx.delete(id)
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'group_destroy',
          display: `Deleted group ${group.name}`,
          targets: [{ type: 'group', id, name: group.name }],
        },
        now,
      )
    })
    this.identities?.clear()
  }

  // ---------- memberships (GroupUser) ----------

  /**
   * GET /group_users: site admins see every membership; anyone else their own memberships and
   * the memberships of the groups they administer.
   */
  async listMembers(p: Principal, query: Record<string, unknown>): Promise<Page<GroupUserJson>> {
    const groupId = query['group_id'] as number | undefined
    const userId = query['user_id'] as number | undefined
    const list = await readListRequest(this.secrets, p.siteId, GROUP_USER_LIST, query, {
      group_id: groupId ?? 'all',
      user_id: userId ?? 'all',
    })
    const visibleTo = isSiteAdmin(p) ? undefined : p.user!.id
    return mapPage(
      await this.groups.memberPage(p.siteId, { groupId, userId, visibleTo }, list),
      toGroupUserJson,
    )
  }

  /** POST /group_users: site admins, or an administrator of the group. */
  async addMember(p: Principal, input: GroupUserInput): Promise<GroupUserJson> {
    const { group, userId } = await this.memberTarget(p, input)
    const users = await this.groups.existingUsers(p.siteId, [userId])
    const username = users.get(userId)
    if (username === undefined) throw ERRORS.userNotFound(`User ${userId} not found`)
    const now = this.now()
    const id = await this.groups.transaction(async (tx) => {
      const id = await tx.addMember(
        p.siteId,
        group.id,
        userId,
        input.admin === true,
        now,
        () => ApiError.modelSave({ user_id: [`${username} is already a member of ${group.name}`] }),
        () => ERRORS.userNotFound(`User ${userId} or group ${group.id} was deleted meanwhile`),
      )
      await this.memberFolders?.forNewMembers(tx.db, p, group.id, [userId], now)
      await this.recordMembers(
        tx,
        p,
        group,
        `Added ${username} to group ${group.name}`,
        userId,
        username,
        now,
      )
      return id
    })
    this.identities?.clear()
    return toGroupUserJson((await this.groups.findMember(p.siteId, id))!)
  }

  /** PATCH /group_users/{id}: sets `admin`; site admins or an administrator of the group. */
  async updateMember(p: Principal, id: number, input: GroupUserInput): Promise<GroupUserJson> {
    const member = await this.memberOf(p, id, input)
    const now = this.now()
    if (input.admin !== undefined && (input.admin ? 1 : 0) !== member.admin) {
      await this.groups.transaction(async (tx) => {
        await tx.setAdmin(id, input.admin === true)
        const what = input.admin ? 'Made' : 'Unmade'
        await this.recordMembers(
          tx,
          p,
          { id: member.group_id, name: member.group_name },
          `${what} ${member.username} an administrator of group ${member.group_name}`,
          member.user_id,
          member.username,
          now,
        )
      })
    }
    return toGroupUserJson((await this.groups.findMember(p.siteId, id))!)
  }

  /** DELETE /group_users/{id}: site admins or an administrator of the group. */
  async removeMember(p: Principal, id: number, input: GroupUserInput): Promise<void> {
    const member = await this.memberOf(p, id, input)
    const now = this.now()
    await this.groups.transaction(async (tx) => {
      await tx.removeMember(id)
      await this.recordMembers(
        tx,
        p,
        { id: member.group_id, name: member.group_name },
        `Removed ${member.username} from group ${member.group_name}`,
        member.user_id,
        member.username,
        now,
      )
    })
    this.identities?.clear()
  }

  // ---------- internals ----------

  /** The group, if the caller may see it (site admins: any; others: their own groups). */
  private async visible(p: Principal, id: number): Promise<GroupRow> {
    const group = await this.groups.find(p.siteId, id)
    if (!group) throw groupNotFound(id)
    if (!isSiteAdmin(p) && !(await this.groups.membership(id, p.user!.id))) throw groupNotFound(id)
    return group
  }

  /** Refuses a caller who is neither a site admin nor an administrator of the group. */
  private async requireGroupAdmin(p: Principal, group: { id: number; name: string }): Promise<void> {
    if (isSiteAdmin(p)) return
    const mine = await this.groups.membership(group.id, p.user!.id)
    if (!mine) throw groupNotFound(group.id)
    if (mine.admin !== 1) {
      throw ERRORS.siteAdminRequired(
        `Only site administrators and administrators of group ${group.name} can change its members`,
      )
    }
  }

  private async memberTarget(
    p: Principal,
    input: GroupUserInput,
  ): Promise<{ group: GroupRow; userId: number }> {
    if (input.group_id === undefined || input.user_id === undefined) {
      throw ERRORS.requestParamsRequired('group_id and user_id are required')
    }
    const group = await this.groups.find(p.siteId, input.group_id)
    if (!group) throw groupNotFound(input.group_id)
    await this.requireGroupAdmin(p, group)
    return { group, userId: input.user_id }
  }

  /** The membership `id`, checked against the group_id and user_id the SDK sends along. */
  private async memberOf(p: Principal, id: number, input: GroupUserInput): Promise<MemberRow> {
    const member = await this.groups.findMember(p.siteId, id)
    if (!member) throw ERRORS.notFound(`Group user ${id} not found`)
    await this.requireGroupAdmin(p, { id: member.group_id, name: member.group_name })
    if (
      (input.group_id !== undefined && input.group_id !== member.group_id) ||
      (input.user_id !== undefined && input.user_id !== member.user_id)
    ) {
      throw ERRORS.requestParamsInvalid(
        `Group user ${id} is not user ${input.user_id} in group ${input.group_id}`,
      )
    }
    return member
  }

  /**
   * The members `user_ids` and `admin_ids` ask for (undefined: leave them as they are): admins
   * are members too. Every id must be a user of the site.
   */
  private async wantedMembers(
    siteId: number,
    input: GroupInput,
  ): Promise<{ userIds?: number[]; adminIds?: number[] } | undefined> {
    if (input.user_ids === undefined && input.admin_ids === undefined) return undefined
    const userIds = input.user_ids === undefined ? undefined : parseIds('user_ids', input.user_ids)
    const adminIds = input.admin_ids === undefined ? undefined : parseIds('admin_ids', input.admin_ids)
    const all = [...new Set([...(userIds ?? []), ...(adminIds ?? [])])]
    const found = await this.groups.existingUsers(siteId, all)
    const missing = all.filter((u) => !found.has(u))
    if (missing.length) throw ERRORS.userNotFound(`No user with id ${missing.join(', ')}`)
    return { ...(userIds ? { userIds } : {}), ...(adminIds ? { adminIds } : {}) }
  }

  /** Brings the memberships to what was asked for, in the caller's transaction. */
  private async applyMembers(
    tx: GroupRepository,
    p: Principal,
    groupId: number,
    current: MemberRow[],
    wanted: { userIds?: number[]; adminIds?: number[] } | undefined,
    now: number,
  ): Promise<void> {
    if (!wanted) return
    const admins = wanted.adminIds ? new Set(wanted.adminIds) : undefined
    const members = new Set(wanted.userIds ?? current.map((m) => m.user_id))
    for (const a of admins ?? []) members.add(a)
    for (const m of current) {
      if (!members.has(m.user_id)) await tx.removeMember(m.id)
      else if (admins && admins.has(m.user_id) !== (m.admin === 1))
        await tx.setAdmin(m.id, admins.has(m.user_id))
    }
    const had = new Set(current.map((m) => m.user_id))
    const added: number[] = []
    for (const u of members) {
      if (had.has(u)) continue
      added.push(u)
      await tx.addMember(
        p.siteId,
        groupId,
        u,
        admins?.has(u) ?? false,
        now,
        () => ERRORS.requestParamsInvalid(`User ${u} was added to the group meanwhile`),
        () => ERRORS.userNotFound(`User ${u} was deleted meanwhile`),
      )
    }
    await this.memberFolders?.forNewMembers(tx.db, p, groupId, added, now)
  }

  private async recordMembers(
    tx: GroupRepository,
    p: Principal,
    group: { id: number; name: string },
    display: string,
    userId: number,
    username: string,
    now: number,
  ): Promise<void> {
    await recordAction(
      tx.db,
      contextOf(p),
      {
        action: 'group_update',
        display,
        targets: [
          { type: 'group', id: group.id, name: group.name },
          { type: 'user', id: userId, name: username },
        ],
      },
      now,
    )
  }
}

/** A group's `allowed_ips` as stored (undefined: not given), or 422 model-save-error. */
function groupAllowedIps(input: GroupInput): string | null | undefined {
  if (input.allowed_ips === undefined) return undefined
  const errors: ModelErrors = {}
  const value = checkAllowedIps(input.allowed_ips, 'allowed_ips', errors)
  if (Object.keys(errors).length) throw ApiError.modelSave(errors)
  return value
}
