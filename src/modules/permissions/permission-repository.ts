import {
  type Expression,
  type ExpressionBuilder,
  type Insertable,
  type Kysely,
  type Selectable,
  type SqlBool,
  sql,
} from 'kysely'
import type { ApiError } from '../../api/errors.js'
import type { ListRequest, Page } from '../../api/list-spec.js'
import { isWithin } from '../../api/paths.js'
import { isUniqueViolation } from '../../db/errors.js'
import { selectPage } from '../../db/list-sql.js'
import { Repository } from '../../db/repository.js'
import type { Database, PermissionsTable } from '../../db/schema.js'

export type PermissionRow = Selectable<PermissionsTable> & {
  username: string | null
  group_name: string | null
}

/** Which permissions a list shows, beyond the list query's own filters. */
export interface PermissionFilter {
  /** Permissions not granted to `userId` only on or inside these folders (absent: all). */
  visibleTo?: { userId: number; folders: string[] } | undefined
  userId?: number | undefined
  groupId?: number | undefined
  /** Those that apply to this path: on it or on a folder above it ('' for none). */
  path: string
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
    .where((eb) => grantedTo(eb, userId))
    .where('permission', '=', 'admin')
    .execute()
  const paths = [...new Set(rows.map((r) => r.path))].sort(
    (a, b) => a.length - b.length || a.localeCompare(b),
  )
  const out: string[] = []
  for (const p of paths) if (!out.some((f) => isWithin(p, f))) out.push(p)
  return out
}

/** The permissions table. */
export class PermissionRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new PermissionRepository(db, this.dialect) as this
  }

  private withUser(siteId: number) {
    return this.db
      .selectFrom('permissions')
      .leftJoin('users', 'users.id', 'permissions.user_id')
      .leftJoin('groups', 'groups.id', 'permissions.group_id')
      .selectAll('permissions')
      .select(['users.username as username', 'groups.name as group_name'])
      .where('permissions.site_id', '=', siteId)
  }

  page(siteId: number, filter: PermissionFilter, list: ListRequest): Promise<Page<PermissionRow>> {
    let q = this.withUser(siteId)
    const scope = filter.visibleTo
    if (scope) q = q.where((eb) => visibleTo(eb, scope))
    if (filter.userId !== undefined) q = q.where('permissions.user_id', '=', filter.userId)
    if (filter.groupId !== undefined) q = q.where('permissions.group_id', '=', filter.groupId)
    if (filter.path !== '')
      q = q.where(sql<string>`lower(permissions.path)`, 'in', ancestors(filter.path.toLowerCase()))
    return selectPage(q, list)
  }

  find(siteId: number, id: number): Promise<PermissionRow | undefined> {
    return this.withUser(siteId).where('permissions.id', '=', id).executeTakeFirst()
  }

  /**
   * Every permission granted to the user, themselves or through their groups: what file access is
   * computed from (the widest wins, whichever way it came).
   */
  grantsOf(siteId: number, userId: number): Promise<{ path: string; permission: string }[]> {
    return this.db
      .selectFrom('permissions')
      .select(['path', 'permission'])
      .where('site_id', '=', siteId)
      .where((eb) => grantedTo(eb, userId))
      .execute()
  }

  adminFolders(siteId: number, userId: number): Promise<string[]> {
    return adminFolders(this.db, siteId, userId)
  }

  /** A permission of this kind for the user or group on the path (in any case) exists. */
  async exists(
    siteId: number,
    grantee: { userId: number } | { groupId: number },
    permission: string,
    path: string,
  ): Promise<boolean> {
    const row = await this.db
      .selectFrom('permissions')
      .select('id')
      .where('site_id', '=', siteId)
      .where((eb) =>
        'userId' in grantee ? eb('user_id', '=', grantee.userId) : eb('group_id', '=', grantee.groupId),
      )
      .where('permission', '=', permission)
      .where(sql<string>`lower(path)`, '=', path.toLowerCase())
      .executeTakeFirst()
    return row !== undefined
  }

  /** Inserts a permission; a concurrent twin (the unique index) is `duplicate`. */
  async insert(
    values: Insertable<PermissionsTable>,
    duplicate: () => ApiError,
  ): Promise<Selectable<PermissionsTable>> {
    try {
      return await this.db.insertInto('permissions').values(values).returningAll().executeTakeFirstOrThrow()
    } catch (err) {
      if (isUniqueViolation(err)) throw duplicate()
      throw err
    }
  }

  async delete(id: number): Promise<void> {
    await this.db.deleteFrom('permissions').where('id', '=', id).execute()
  }
}

/** `path` and every folder above it, lower-cased: the permissions that apply to `path`. */
function ancestors(path: string): string[] {
  const parts = path.split('/')
  return parts.map((_, i) => parts.slice(0, i + 1).join('/'))
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`)

/** Permissions granted to the user or to a group they belong to. */
function grantedTo(eb: ExpressionBuilder<any, any>, userId: number): Expression<SqlBool> {
  return eb.or([
    eb('permissions.user_id', '=', userId),
    eb(
      'permissions.group_id',
      'in',
      eb.selectFrom('group_users').select('group_users.group_id').where('group_users.user_id', '=', userId),
    ),
  ])
}

/**
 * The caller's own permissions (those of their groups included), and every permission on or
 * inside a folder they administer.
 */
function visibleTo(eb: ExpressionBuilder<any, any>, scope: { userId: number; folders: string[] }) {
  const path = sql.ref('permissions.path')
  const conditions: Expression<SqlBool>[] = [grantedTo(eb, scope.userId)]
  for (const f of scope.folders) {
    const lower = f.toLowerCase()
    conditions.push(sql<SqlBool>`lower(${path}) = ${lower}`)
    conditions.push(sql<SqlBool>`lower(${path}) like ${`${escapeLike(lower)}/%`} escape '\\'`)
  }
  return eb.or(conditions)
}
