import { ERRORS } from '../../api/error-factories.js'
import { ApiError, addModelError, type ModelErrors } from '../../api/errors.js'
import { type ListSpec, mapPage, type Page } from '../../api/list-spec.js'
import { isWithin, normalizePath } from '../../api/paths.js'
import { isSiteAdmin, type Principal } from '../../identity/principal.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import { contextOf, recordAction } from '../actions/action-recorder.js'
import type { GroupRepository } from '../groups/group-repository.js'
import { readListRequest } from '../list-request.js'
import type { UserRepository } from '../users/user-repository.js'
import type { PermissionRepository, PermissionRow } from './permission-repository.js'

export { adminFolders } from './permission-repository.js'

export const PERMISSIONS = ['full', 'readonly', 'writeonly', 'list', 'history', 'admin'] as const
export type PermissionType = (typeof PERMISSIONS)[number]

type Row = PermissionRow

/**
 * The Permission resource (Files.com fields; every permission is recursive). A permission belongs
 * to a user (`user_id`) or to a group (`group_id`, and then `user_id` is null).
 */
export interface PermissionJson {
  id: number
  path: string
  user_id: number | null
  username: string | null
  group_id: number | null
  group_name: string | null
  permission: string
  recursive: true
}

export interface CreatePermissionInput {
  path: string
  user_id?: number | undefined
  username?: string | undefined
  group_id?: number | undefined
  group_name?: string | undefined
  permission?: string | undefined
  recursive?: boolean | undefined
}

export const PERMISSION_LIST: ListSpec = {
  name: 'permissions',
  idColumn: 'permissions.id',
  sort: {
    path: { column: 'permissions.path', type: 'string' },
    user_id: { column: 'permissions.user_id', type: 'integer', nullsAs: 0 },
    group_id: { column: 'permissions.group_id', type: 'integer', nullsAs: 0 },
    permission: { column: 'permissions.permission', type: 'string' },
  },
  filter: {
    path: { column: 'permissions.path', type: 'string' },
    user_id: { column: 'permissions.user_id', type: 'integer' },
    group_id: { column: 'permissions.group_id', type: 'integer' },
    permission: { column: 'permissions.permission', type: 'string' },
  },
}

interface Grantee {
  user?: { id: number; username: string }
  group?: { id: number; name: string }
  /** How the Action names it. */
  label: string
  target: { type: string; id: number; name: string }
}

/** Who the caller may manage permissions for: everything, or the inside of some folders. */
type Scope = { all: true } | { all: false; userId: number; folders: string[] }

const folderAdminRequired = (why: string) => ERRORS.folderAdminPermissionRequired(why)

export function toPermissionJson(row: Row): PermissionJson {
  return {
    id: row.id,
    path: row.path,
    user_id: row.user_id,
    username: row.username,
    group_id: row.group_id,
    group_name: row.group_name,
    permission: row.permission,
    recursive: true,
  }
}

export class PermissionService {
  constructor(
    readonly permissions: PermissionRepository,
    private readonly users: UserRepository,
    private readonly groups: GroupRepository,
    private readonly secrets: SiteSecrets,
    readonly now: () => number = Date.now,
  ) {}

  /**
   * GET /permissions. Site admins see all; a folder admin the permissions inside the folders they
   * administer (and their own); anyone else their own. `path` narrows to the permissions that apply
   * to that path (on it or on a folder above it), `user_id` to one user (0 = the caller),
   * `group_id` to one group. A user's own permissions include those of their groups.
   */
  async list(p: Principal, query: Record<string, unknown>): Promise<Page<PermissionJson>> {
    const scope = await this.scopeOf(p)
    const userId = this.listUser(p, scope, query['user_id'] as number | undefined)
    const groupId = query['group_id'] as number | undefined
    const path = typeof query['path'] === 'string' && query['path'] !== '' ? normalizePath(query['path']) : ''
    const list = await readListRequest(this.secrets, p.siteId, PERMISSION_LIST, query, {
      user_id: userId ?? 'all',
      group_id: groupId ?? 'all',
      path,
    })
    const visibleTo = scope.all ? undefined : { userId: scope.userId, folders: scope.folders }
    return mapPage(
      await this.permissions.page(p.siteId, { visibleTo, userId, groupId, path }, list),
      toPermissionJson,
    )
  }

  /** POST /permissions: site admins anywhere, folder admins inside the folders they administer. */
  async create(p: Principal, input: CreatePermissionInput): Promise<PermissionJson> {
    const scope = await this.scopeOf(p)
    if (!scope.all && scope.folders.length === 0) {
      throw folderAdminRequired('Only site administrators and folder administrators can grant permissions')
    }
    const path = normalizePath(input.path)
    this.authorizePath(scope, path)

    const errors: ModelErrors = {}
    if (path === '')
      addModelError(errors, 'path', "can't be the root folder: make the user a site administrator instead")
    const permission = input.permission ?? 'full'
    if (!(PERMISSIONS as readonly string[]).includes(permission)) {
      addModelError(errors, 'permission', `must be one of ${PERMISSIONS.join(', ')}`)
    }
    if (input.recursive === false)
      addModelError(errors, 'recursive', 'must be true: every permission applies to subfolders')
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)

    const grantee = await this.resolveGrantee(p.siteId, input)
    const duplicate = () =>
      ApiError.modelSave({ permission: [`${permission} on ${path} already exists for ${grantee.label}`] })
    const key = grantee.group ? { groupId: grantee.group.id } : { userId: grantee.user!.id }
    if (await this.permissions.exists(p.siteId, key, permission, path)) throw duplicate()

    const now = this.now()
    const row = await this.permissions.transaction(async (tx) => {
      const inserted = await tx.insert(
        {
          site_id: p.siteId,
          user_id: grantee.user?.id ?? null,
          group_id: grantee.group?.id ?? null,
          path,
          permission,
          created_at: now,
        },
        duplicate,
      )
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'permission_create',
          display: `Granted ${permission} on /${path} to ${grantee.label}`,
          path,
          targets: [{ type: 'permission', id: inserted.id, name: permission }, grantee.target],
        },
        now,
      )
      return {
        ...inserted,
        username: grantee.user?.username ?? null,
        group_name: grantee.group?.name ?? null,
      }
    })
    return toPermissionJson(row)
  }

  /** DELETE /permissions/{id}: the same authorization as creating it. */
  async remove(p: Principal, id: number): Promise<void> {
    const scope = await this.scopeOf(p)
    if (!scope.all && scope.folders.length === 0) {
      throw folderAdminRequired('Only site administrators and folder administrators can remove permissions')
    }
    const row = await this.permissions.find(p.siteId, id)
    if (!row) throw ERRORS.notFound(`Permission ${id} not found`)
    this.authorizePath(scope, row.path)
    const now = this.now()
    await this.permissions.transaction(async (tx) => {
      await tx.delete(row.id)
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'permission_destroy',
          display: `Removed ${row.permission} on /${row.path} from ${
            row.group_id !== null ? `group ${row.group_name}` : (row.username ?? `user #${row.user_id}`)
          }`,
          path: row.path,
          targets: [
            { type: 'permission', id: row.id, name: row.permission },
            row.group_id !== null
              ? { type: 'group', id: row.group_id, ...(row.group_name ? { name: row.group_name } : {}) }
              : { type: 'user', id: row.user_id!, ...(row.username ? { name: row.username } : {}) },
          ],
        },
        now,
      )
    })
  }

  // ---------- internals ----------

  private async scopeOf(p: Principal): Promise<Scope> {
    if (isSiteAdmin(p)) return { all: true }
    const userId = p.user!.id
    return { all: false, userId, folders: await this.permissions.adminFolders(p.siteId, userId) }
  }

  private authorizePath(scope: Scope, path: string): void {
    if (scope.all || scope.folders.some((f) => isWithin(path, f))) return
    throw folderAdminRequired(
      `You do not administer a folder containing ${path === '' ? 'the root folder' : path}`,
    )
  }

  /** `user_id` as the route's schema validated it (an integer ≥ 0; 0 = the caller), or undefined. */
  private listUser(p: Principal, scope: Scope, raw: number | undefined): number | undefined {
    if (raw === undefined) return undefined
    let id = raw
    if (id === 0) {
      if (!p.user) throw ERRORS.userRequired('user_id 0 means the caller, and a site-wide key has no user')
      id = p.user.id
    }
    if (!scope.all && scope.folders.length === 0 && id !== p.user?.id) {
      throw folderAdminRequired(
        'Only site administrators and folder administrators can list other users’ permissions',
      )
    }
    return id
  }

  /** The user, or the group (`group_id` or `group_name`), the permission is for. */
  private async resolveGrantee(siteId: number, input: CreatePermissionInput): Promise<Grantee> {
    const named = (v: unknown) => v !== undefined && v !== ''
    const byGroup = named(input.group_id) || named(input.group_name)
    const byUser = named(input.user_id) || named(input.username)
    if (byGroup && byUser) throw ERRORS.requestParamsInvalid('Name a user or a group, not both')
    if (byGroup) {
      const group = await this.groups.findByIdOrName(siteId, input.group_id, input.group_name)
      if (!group) {
        const which = input.group_id !== undefined ? `Group ${input.group_id}` : `Group ${input.group_name}`
        throw ERRORS.groupNotFound(`${which} not found`)
      }
      return {
        group: { id: group.id, name: group.name },
        label: `group ${group.name}`,
        target: { type: 'group', id: group.id, name: group.name },
      }
    }
    const user = await this.resolveUser(siteId, input)
    return { user, label: user.username, target: { type: 'user', id: user.id, name: user.username } }
  }

  private async resolveUser(
    siteId: number,
    input: CreatePermissionInput,
  ): Promise<{ id: number; username: string }> {
    if (input.user_id === undefined && (input.username === undefined || input.username === '')) {
      throw ERRORS.requestParamsRequired('Name the user or group: user_id, username, group_id or group_name')
    }
    const user = await this.users.findByIdOrName(siteId, input.user_id, input.username)
    if (!user) {
      const who = input.user_id !== undefined ? `User ${input.user_id}` : `User ${input.username}`
      throw ERRORS.userNotFound(
        `${who} not found${input.user_id !== undefined && input.username ? ' with that username' : ''}`,
      )
    }
    return user
  }
}
