import {
  type Expression,
  type ExpressionBuilder,
  type Kysely,
  type Selectable,
  type SqlBool,
  sql,
} from 'kysely'
import { ERRORS } from '../../api/error-factories.js'
import { ApiError, addModelError, type ModelErrors } from '../../api/errors.js'
import { toPage } from '../../api/list-cursor.js'
import { parseListQuery } from '../../api/list-query.js'
import type { ListSpec, Page } from '../../api/list-spec.js'
import { isUniqueViolation } from '../../db/errors.js'
import { applyListQuery } from '../../db/list-sql.js'
import type { Database, PermissionsTable } from '../../db/schema.js'
import { contextOf, recordAction } from '../actions/action-recorder.js'
import { isSiteAdmin, type Principal } from '../auth/principal.js'
import { isWithin, normalizePath } from '../paths.js'
import type { SiteSecrets } from '../sites/site-secrets.js'

export const PERMISSIONS = ['full', 'readonly', 'writeonly', 'list', 'history', 'admin'] as const
export type PermissionType = (typeof PERMISSIONS)[number]

type Row = Selectable<PermissionsTable> & { username: string | null }

/** The Permission resource (Files.com fields; Wharf has no groups yet, and every permission is recursive). */
export interface PermissionJson {
  id: number
  path: string
  user_id: number
  username: string | null
  group_id: null
  group_name: null
  permission: string
  recursive: true
}

export interface CreatePermissionInput {
  path: string
  user_id?: number | undefined
  username?: string | undefined
  permission?: string | undefined
  recursive?: boolean | undefined
}

export const PERMISSION_LIST: ListSpec = {
  name: 'permissions',
  idColumn: 'permissions.id',
  sort: {
    path: { column: 'permissions.path', type: 'string' },
    user_id: { column: 'permissions.user_id', type: 'integer' },
    permission: { column: 'permissions.permission', type: 'string' },
  },
  filter: {
    path: { column: 'permissions.path', type: 'string' },
    user_id: { column: 'permissions.user_id', type: 'integer' },
    permission: { column: 'permissions.permission', type: 'string' },
  },
}

/**
 * The folders a user administers (permission `admin`, which reaches everything inside). Folders
 * inside another listed folder are left out. Site admins are not special here: callers check
 * `isSiteAdmin` first.
 */
export async function adminFolders(db: Kysely<Database>, siteId: number, userId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('permissions')
    .select('path')
    .where('site_id', '=', siteId)
    .where('user_id', '=', userId)
    .where('permission', '=', 'admin')
    .execute()
  const paths = [...new Set(rows.map((r) => r.path))].sort(
    (a, b) => a.length - b.length || a.localeCompare(b),
  )
  const out: string[] = []
  for (const p of paths) if (!out.some((f) => isWithin(p, f))) out.push(p)
  return out
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
    group_id: null,
    group_name: null,
    permission: row.permission,
    recursive: true,
  }
}

export class PermissionService {
  constructor(
    readonly db: Kysely<Database>,
    private readonly secrets: SiteSecrets,
    readonly now: () => number = Date.now,
  ) {}

  /**
   * GET /permissions. Site admins see all; a folder admin the permissions inside the folders they
   * administer (and their own); anyone else their own. `path` narrows to the permissions that apply
   * to that path (on it or on a folder above it), `user_id` to one user (0 = the caller).
   */
  async list(p: Principal, query: Record<string, unknown>): Promise<Page<PermissionJson>> {
    const scope = await this.scopeOf(p)
    const userId = this.listUser(p, scope, query['user_id'] as number | undefined)
    const path = typeof query['path'] === 'string' && query['path'] !== '' ? normalizePath(query['path']) : ''
    const secret = await this.secrets.signingSecret(p.siteId)
    const lq = parseListQuery(PERMISSION_LIST, query, secret, { user_id: userId ?? 'all', path })
    let q = this.rows(p.siteId)
    if (!scope.all) q = q.where((eb) => visibleTo(eb, scope))
    if (userId !== undefined) q = q.where('permissions.user_id', '=', userId)
    if (path !== '') q = q.where(sql<string>`lower(permissions.path)`, 'in', ancestors(path.toLowerCase()))
    const rows = await applyListQuery(q, PERMISSION_LIST, lq).execute()
    const page = toPage(rows, PERMISSION_LIST, lq, secret)
    return { ...page, items: page.items.map(toPermissionJson) }
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

    const user = await this.resolveUser(p.siteId, input)
    const duplicate = () =>
      ApiError.modelSave({ permission: [`${permission} on ${path} already exists for ${user.username}`] })
    const existing = await this.db
      .selectFrom('permissions')
      .select('id')
      .where('site_id', '=', p.siteId)
      .where('user_id', '=', user.id)
      .where('permission', '=', permission)
      .where(sql<string>`lower(path)`, '=', path.toLowerCase())
      .executeTakeFirst()
    if (existing) throw duplicate()

    const now = this.now()
    try {
      const row = await this.db.transaction().execute(async (trx) => {
        const inserted = await trx
          .insertInto('permissions')
          .values({ site_id: p.siteId, user_id: user.id, path, permission, created_at: now })
          .returningAll()
          .executeTakeFirstOrThrow()
        await recordAction(
          trx,
          contextOf(p),
          {
            action: 'permission_create',
            display: `Granted ${permission} on /${path} to ${user.username}`,
            path,
            targets: [
              { type: 'permission', id: inserted.id, name: permission },
              { type: 'user', id: user.id, name: user.username },
            ],
          },
          now,
        )
        return { ...inserted, username: user.username }
      })
      return toPermissionJson(row)
    } catch (err) {
      if (isUniqueViolation(err)) throw duplicate()
      throw err
    }
  }

  /** DELETE /permissions/{id}: the same authorization as creating it. */
  async remove(p: Principal, id: number): Promise<void> {
    const scope = await this.scopeOf(p)
    if (!scope.all && scope.folders.length === 0) {
      throw folderAdminRequired('Only site administrators and folder administrators can remove permissions')
    }
    const row = await this.rows(p.siteId).where('permissions.id', '=', id).executeTakeFirst()
    if (!row) throw ERRORS.notFound(`Permission ${id} not found`)
    this.authorizePath(scope, row.path)
    const now = this.now()
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('permissions').where('id', '=', row.id).execute()
      await recordAction(
        trx,
        contextOf(p),
        {
          action: 'permission_destroy',
          display: `Removed ${row.permission} on /${row.path} from ${row.username ?? `user #${row.user_id}`}`,
          path: row.path,
          targets: [
            { type: 'permission', id: row.id, name: row.permission },
            { type: 'user', id: row.user_id, ...(row.username ? { name: row.username } : {}) },
          ],
        },
        now,
      )
    })
  }

  // ---------- internals ----------

  private rows(siteId: number) {
    return this.db
      .selectFrom('permissions')
      .innerJoin('users', 'users.id', 'permissions.user_id')
      .selectAll('permissions')
      .select('users.username as username')
      .where('permissions.site_id', '=', siteId)
  }

  private async scopeOf(p: Principal): Promise<Scope> {
    if (isSiteAdmin(p)) return { all: true }
    const userId = p.user!.id
    return { all: false, userId, folders: await adminFolders(this.db, p.siteId, userId) }
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

  private async resolveUser(
    siteId: number,
    input: CreatePermissionInput,
  ): Promise<{ id: number; username: string }> {
    if (input.user_id === undefined && (input.username === undefined || input.username === '')) {
      throw ERRORS.requestParamsRequired('Name the user: user_id or username')
    }
    let q = this.db.selectFrom('users').select(['id', 'username']).where('site_id', '=', siteId)
    if (input.user_id !== undefined) q = q.where('id', '=', input.user_id)
    if (input.username !== undefined && input.username !== '')
      q = q.where('username_lower', '=', input.username.toLowerCase())
    const user = await q.executeTakeFirst()
    if (!user) {
      const who = input.user_id !== undefined ? `User ${input.user_id}` : `User ${input.username}`
      throw ERRORS.userNotFound(
        `${who} not found${input.user_id !== undefined && input.username ? ' with that username' : ''}`,
      )
    }
    return user
  }
}

/** `path` and every folder above it, lower-cased: the permissions that apply to `path`. */
function ancestors(path: string): string[] {
  const parts = path.split('/')
  return parts.map((_, i) => parts.slice(0, i + 1).join('/'))
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`)

/** The caller's own permissions, and every permission on or inside a folder they administer. */
function visibleTo(eb: ExpressionBuilder<any, any>, scope: Extract<Scope, { all: false }>) {
  const path = sql.ref('permissions.path')
  const conditions: Expression<SqlBool>[] = [eb('permissions.user_id', '=', scope.userId)]
  for (const f of scope.folders) {
    const lower = f.toLowerCase()
    conditions.push(sql<SqlBool>`lower(${path}) = ${lower}`)
    conditions.push(sql<SqlBool>`lower(${path}) like ${`${escapeLike(lower)}/%`} escape '\\'`)
  }
  return eb.or(conditions)
}
