import type { Kysely } from 'kysely'
import { hasControlCharacter } from '../../api/control-characters.js'
import { ApiError, addModelError, type ModelErrors } from '../../api/errors.js'
import { normalizePath } from '../../api/paths.js'
import type { Database } from '../../db/schema.js'
import type { Principal } from '../../identity/principal.js'
import { type ActionContext, contextOf, recordAction } from '../actions/action-recorder.js'
import type { PermissionRepository } from '../permissions/permission-repository.js'
import { PERMISSIONS } from '../permissions/permission-service.js'
import type { BehaviorRepository } from './behavior-repository.js'

type Value = Record<string, unknown>

export const LOCK_LEVELS = ['children', 'children_recursive'] as const
const FOLDER_NAMES = ['username', 'name'] as const
const MAX_SUBFOLDERS = 50

/** `lock_subfolders`: `children` locks the folder's own subfolders, `children_recursive` every level below. */
export function lockValue(raw: Value, errors: ModelErrors): Value {
  const level = raw['level'] ?? 'children'
  if (typeof level !== 'string' || !(LOCK_LEVELS as readonly string[]).includes(level)) {
    addModelError(errors, 'value.level', `must be one of ${LOCK_LEVELS.join(', ')}`)
  }
  return { level }
}

export function userFoldersValue(raw: Value, errors: ModelErrors): Value {
  const permission = raw['permission'] ?? 'full'
  if (typeof permission !== 'string' || !(PERMISSIONS as readonly string[]).includes(permission)) {
    addModelError(errors, 'value.permission', `must be one of ${PERMISSIONS.join(', ')}`)
  }
  const folderName = raw['new_folder_name'] ?? 'username'
  if (typeof folderName !== 'string' || !(FOLDER_NAMES as readonly string[]).includes(folderName)) {
    addModelError(errors, 'value.new_folder_name', `must be one of ${FOLDER_NAMES.join(', ')}`)
  }
  const subfolders: string[] = []
  const rawSubs = raw['subfolders'] ?? []
  if (!Array.isArray(rawSubs) || rawSubs.length > MAX_SUBFOLDERS) {
    addModelError(errors, 'value.subfolders', `must be a list of at most ${MAX_SUBFOLDERS} folder paths`)
  } else {
    for (const s of rawSubs) {
      let path = ''
      try {
        path = typeof s === 'string' ? normalizePath(s) : ''
      } catch {}
      if (path === '' || /\s(\/|$)/.test(path) || hasControlCharacter(path)) {
        addModelError(
          errors,
          'value.subfolders',
          `has an invalid folder path ${JSON.stringify(s)} (a path inside the user's folder, such as "inbox" or "work/drafts")`,
        )
      } else if (!subfolders.includes(path)) subfolders.push(path)
    }
  }
  const existing = raw['existing_users'] ?? false
  if (typeof existing !== 'boolean') addModelError(errors, 'value.existing_users', 'must be true or false')
  const groupId = raw['group_id'] ?? null
  if (groupId !== null && !(Number.isSafeInteger(groupId) && (groupId as number) > 0)) {
    addModelError(errors, 'value.group_id', 'must be the id of a group of the site')
  }
  return {
    permission,
    new_folder_name: folderName,
    subfolders,
    existing_users: existing,
    ...(groupId !== null ? { group_id: groupId } : {}),
  }
}

/** The group a `create_user_folders` value limits its folders to, or null (every user). */
export function groupOf(value: Value): number | null {
  const id = value['group_id']
  return typeof id === 'number' ? id : null
}

type Author = { userId: number | null; apiKeyId: number | null }

/**
 * What making folders needs of the file tree (the files module's FileRepository): named here so
 * that behaviors do not import the file core, which stands on them.
 */
export interface FolderTree {
  on(db: Kysely<Database>): FolderTree
  findByPath(siteId: number, path: string): Promise<{ type: string } | undefined>
  ensureParents(ctx: ActionContext, author: Author, path: string, now: number, create: boolean): Promise<void>
  insertFolder(ctx: ActionContext, author: Author, path: string, now: number): Promise<unknown>
}

/** What a user's folder is named after. */
export interface FolderOwner {
  id: number
  username: string
  name: string | null
}

/**
 * `create_user_folders`: a folder per user inside each folder that has the behavior, with the
 * behavior's subfolders and the user's permission on it. Runs in the transaction that creates
 * the user (or the behavior, for `existing_users`); folders and permissions already there stay.
 * With `group_id`, only members of that group get one, in the transaction that adds them.
 */
export class UserFolders {
  constructor(
    private readonly behaviors: BehaviorRepository,
    private readonly files: FolderTree,
    private readonly permissions: PermissionRepository,
  ) {}

  /** A new user: every `create_user_folders` behavior of the site without a group makes its folder. */
  async forNewUser(db: Kysely<Database>, p: Principal, user: FolderOwner, now: number): Promise<void> {
    const rows = await this.behaviors.on(db).ofType(p.siteId, 'create_user_folders')
    for (const row of rows) {
      const value = JSON.parse(row.value) as Value
      if (groupOf(value) === null) await this.make(db, p, row.path, value, [user], now)
    }
  }

  /**
   * Users who just became members of a group: every `create_user_folders` behavior of that group
   * makes their folders, in the transaction that adds them.
   */
  async forNewMembers(
    db: Kysely<Database>,
    p: Principal,
    groupId: number,
    userIds: readonly number[],
    now: number,
  ): Promise<void> {
    if (userIds.length === 0) return
    const rows = (await this.behaviors.on(db).ofType(p.siteId, 'create_user_folders')).filter(
      (r) => groupOf(JSON.parse(r.value) as Value) === groupId,
    )
    if (rows.length === 0) return
    const users = await db
      .selectFrom('users')
      .select(['id', 'username', 'name'])
      .where('site_id', '=', p.siteId)
      .where('id', 'in', [...userIds])
      .orderBy('id')
      .execute()
    for (const row of rows) await this.make(db, p, row.path, JSON.parse(row.value) as Value, users, now)
  }

  /** Whether the group a behavior names is one of the site's. */
  async groupExists(db: Kysely<Database>, siteId: number, groupId: number): Promise<boolean> {
    const row = await db
      .selectFrom('groups')
      .select('id')
      .where('site_id', '=', siteId)
      .where('id', '=', groupId)
      .executeTakeFirst()
    return row !== undefined
  }

  /**
   * A behavior created with `existing_users`: the folders of every user of the site, or of the
   * current members of its group.
   */
  async forExistingUsers(
    db: Kysely<Database>,
    p: Principal,
    base: string,
    value: Value,
    now: number,
  ): Promise<void> {
    const groupId = groupOf(value)
    let q = db
      .selectFrom('users')
      .select(['users.id', 'users.username', 'users.name'])
      .where('users.site_id', '=', p.siteId)
    if (groupId !== null) {
      q = q.where((eb) =>
        eb.exists(
          eb
            .selectFrom('group_users')
            .select('group_users.id')
            .whereRef('group_users.user_id', '=', 'users.id')
            .where('group_users.group_id', '=', groupId),
        ),
      )
    }
    const users = await q.orderBy('users.id').execute()
    await this.make(db, p, base, value, users, now)
  }

  /** One behavior's folders, for the users given. */
  async make(
    db: Kysely<Database>,
    p: Principal,
    base: string,
    value: Value,
    users: readonly FolderOwner[],
    now: number,
  ): Promise<void> {
    const files = this.files.on(db)
    const permissions = this.permissions.on(db)
    const ctx = contextOf(p)
    const author: Author = { userId: p.user?.id ?? null, apiKeyId: p.apiKey?.id ?? null }
    const permission = String(value['permission'] ?? 'full')
    for (const user of users) {
      const path = joined(base, folderNameOf(user, value))
      const existing = await files.findByPath(p.siteId, path)
      // A file in the way: no folder, and no permission on someone else's file.
      if (existing && existing.type !== 'directory') continue
      if (!existing) {
        await files.ensureParents(ctx, author, path, now, true)
        await files.insertFolder(ctx, author, path, now)
      }
      for (const sub of (value['subfolders'] ?? []) as string[]) {
        const subPath = joined(path, sub)
        if (await files.findByPath(p.siteId, subPath)) continue
        try {
          await files.ensureParents(ctx, author, subPath, now, true)
          await files.insertFolder(ctx, author, subPath, now)
        } catch (err) {
          // A file in the way (refused before any statement): that subfolder is not made.
          if (!(err instanceof ApiError)) throw err
        }
      }
      if (await permissions.exists(p.siteId, { userId: user.id }, permission, path)) continue
      const inserted = await permissions.insert(
        { site_id: p.siteId, user_id: user.id, path, permission, created_at: now },
        () => ApiError.modelSave({ permission: [`${permission} on ${path} already exists`] }),
      )
      await recordAction(
        db,
        ctx,
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
    }
  }
}

/** The user's display name when asked for and usable as a folder name, else the username. */
function folderNameOf(user: FolderOwner, value: Value): string {
  const name = user.name?.trim() ?? ''
  if (
    value['new_folder_name'] === 'name' &&
    name !== '' &&
    !/[/\\]/.test(name) &&
    !hasControlCharacter(name)
  ) {
    return name
  }
  return user.username
}

const joined = (a: string, b: string) => (a === '' ? b : `${a}/${b}`)
