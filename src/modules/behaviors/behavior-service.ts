import type { Kysely } from 'kysely'
import { applyingAt } from '../../api/behavior-matching.js'
import { ERRORS } from '../../api/error-factories.js'
import { ApiError, addModelError, type ModelErrors } from '../../api/errors.js'
import { mapPage, type Page } from '../../api/list-spec.js'
import { isWithin, normalizePath } from '../../api/paths.js'
import { refuseChangedReadOnly } from '../../api/read-only-fields.js'
import type { Database } from '../../db/schema.js'
import { isSiteAdmin, type Principal } from '../../identity/principal.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import type { AddressGuard } from '../../webhooks/address-guard.js'
import type { WebhookTestRequest } from '../../webhooks/behavior-webhooks.js'
import { syncEndpoints } from '../../webhooks/endpoints/endpoint-rows.js'
import { WEBHOOK_OPERATIONS } from '../../webhooks/webhook-operations.js'
import { readListRequest } from '../list-request.js'
import type { PermissionRepository } from '../permissions/permission-repository.js'
import { BEHAVIOR_LIST, type BehaviorRepository, type BehaviorRow } from './behavior-repository.js'
import {
  AVAILABLE_TYPES,
  type BehaviorType,
  checkValue,
  isBehaviorType,
  shownValue,
  WEBHOOK_BEHAVIOR_TRIGGERS,
} from './behavior-types.js'
import { groupOf, type UserFolders } from './user-folders.js'

/** The Behavior resource, as the Files.com SDK's model has it. */
export interface BehaviorJson {
  id: number
  path: string
  attachment_url: null
  behavior: string
  name: string | null
  description: string | null
  value: Record<string, unknown>
  disable_parent_folder_behavior: boolean
  recursive: boolean
}

export interface BehaviorInput {
  path?: string | undefined
  behavior?: string | undefined
  /** An object, or the same as JSON text (the SDKs send text; XML bodies must). */
  value?: unknown
  name?: string | null | undefined
  description?: string | null | undefined
  recursive?: boolean | undefined
  disable_parent_folder_behavior?: boolean | undefined
}

/** `POST /behaviors/webhook/test`: where and how to send one test request. */
export interface WebhookTestInput {
  url?: string | null | undefined
  method?: unknown
  encoding?: unknown
  headers?: unknown
  body?: unknown
  action?: unknown
}

/** A checked test request: its URL, the operation its payload names, and how it is sent. */
/** PATCH: the settings that change; the rest (what the SDK's `save()` echoes) must be as shown. */
export interface BehaviorChange {
  value?: unknown
  name?: string | null | undefined
  description?: string | null | undefined
  recursive?: boolean | undefined
  disable_parent_folder_behavior?: boolean | undefined
  [echo: string]: unknown
}

const READ_ONLY_FIELDS = ['path', 'behavior', 'attachment_url']
/** A value's JSON text at most (headers, bodies and URLs included). */
const MAX_VALUE_BYTES = 65_536

/** Whose behaviors the caller may manage: everywhere, or inside some folders. */
interface Scope {
  /** null: every folder (a site admin). */
  folders: string[] | null
  keyPath: string | null
}

export function toBehaviorJson(row: BehaviorRow): BehaviorJson {
  return {
    id: row.id,
    path: row.path,
    attachment_url: null,
    behavior: row.behavior,
    name: row.name,
    description: row.description,
    value: shownValue(row.behavior, JSON.parse(row.value) as Record<string, unknown>),
    disable_parent_folder_behavior: row.disable_parent_folder_behavior === 1,
    recursive: row.recursive === 1,
  }
}

/**
 * Folder behaviors: settings on a folder, inherited by its subfolders when recursive. Site admins
 * manage them anywhere, folder admins (permission `admin`) on and inside their folders. The HTTP
 * front end keeps keys restricted to a folder away from these endpoints; the service holds such a
 * key to its folder all the same, as the file core does. Changes are not Actions: the model's
 * list of Actions has none for behaviors.
 */
export class BehaviorService {
  constructor(
    private readonly behaviors: BehaviorRepository,
    private readonly permissions: PermissionRepository,
    private readonly secrets: SiteSecrets,
    private readonly guard: AddressGuard,
    private readonly now: () => number = Date.now,
    /** create_user_folders with existing_users: the folders of the users already there. */
    private readonly userFolders?: UserFolders,
  ) {}

  /** GET /behaviors: every behavior the caller may manage, by `behavior`, paged. */
  async list(p: Principal, query: Record<string, unknown>): Promise<Page<BehaviorJson>> {
    const scope = await this.scopeOf(p)
    const list = await readListRequest(this.secrets, p.siteId, BEHAVIOR_LIST, query)
    const page = await this.behaviors.page(p.siteId, { within: roots(scope) }, list)
    return mapPage(page, toBehaviorJson)
  }

  async get(p: Principal, id: number): Promise<BehaviorJson> {
    return toBehaviorJson(await this.managed(p, id))
  }

  /**
   * GET /behaviors/folders/{path}: the behaviors on the folder itself, or, with
   * `ancestor_behaviors`, every behavior that applies to it: its own and those inherited from
   * the folders above (the rule of behavior-matching.ts; each names the folder it is on).
   */
  async listFor(p: Principal, rawPath: string, query: Record<string, unknown>): Promise<Page<BehaviorJson>> {
    const path = normalizePath(rawPath)
    const scope = await this.scopeOf(p)
    reach(scope, path)
    const ancestors = query['ancestor_behaviors'] === true
    const { ancestor_behaviors: _, ...listQuery } = query
    const list = await readListRequest(this.secrets, p.siteId, BEHAVIOR_LIST, listQuery, {
      path: path.toLowerCase(),
      ancestors,
    })
    const filter = ancestors
      ? { ids: applyingAt(await this.behaviors.onAndAbove(p.siteId, path), path).map((r) => r.id) }
      : { path }
    return mapPage(await this.behaviors.page(p.siteId, filter, list), toBehaviorJson)
  }

  async create(p: Principal, input: BehaviorInput): Promise<BehaviorJson> {
    if (input.path === undefined) throw ERRORS.requestParamsRequired('Missing required parameter: path')
    if (input.behavior === undefined || input.behavior === '') {
      throw ERRORS.requestParamsRequired('Missing required parameter: behavior')
    }
    const path = normalizePath(input.path)
    reach(await this.scopeOf(p), path)
    const errors: ModelErrors = {}
    const type = input.behavior
    if (!isBehaviorType(type)) {
      addModelError(
        errors,
        'behavior',
        `${JSON.stringify(type)} is not a behavior Wharf supports (supported: ${AVAILABLE_TYPES.join(', ')})`,
      )
      throw ApiError.modelSave(errors)
    }
    const value = this.checkedValue(type, input.value ?? {}, errors, undefined)
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)
    const now = this.now()
    const row = await this.behaviors.transaction(async (tx) => {
      await this.requireGroup(tx.db, p, type, value)
      const inserted = await tx.insert({
        site_id: p.siteId,
        path,
        path_lower: path.toLowerCase(),
        behavior: type,
        value,
        name: input.name ?? null,
        description: input.description ?? null,
        recursive: input.recursive === true ? 1 : 0,
        disable_parent_folder_behavior: input.disable_parent_folder_behavior === true ? 1 : 0,
        created_at: now,
        updated_at: now,
      })
      // A webhook behavior's URLs are endpoints (webhook_endpoints), kept in step with it.
      if (type === 'webhook') await syncEndpoints(tx.db, p.siteId, now)
      const v = JSON.parse(value) as Record<string, unknown>
      if (type === 'create_user_folders' && v['existing_users'] === true) {
        await this.userFolders?.forExistingUsers(tx.db, p, path, v, now)
      }
      return inserted
    })
    return toBehaviorJson(row)
  }

  /** PATCH /behaviors/{id}: the path and type stay; a value given replaces the whole value. */
  async update(p: Principal, id: number, input: BehaviorChange): Promise<BehaviorJson> {
    const row = await this.managed(p, id)
    refuseChangedReadOnly(input, toBehaviorJson(row), READ_ONLY_FIELDS)
    const errors: ModelErrors = {}
    const next = { ...row }
    if (input.value !== undefined) {
      const stored = JSON.parse(row.value) as Record<string, unknown>
      next.value = this.checkedValue(row.behavior as BehaviorType, input.value, errors, stored)
    }
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)
    if (input.name !== undefined) next.name = input.name
    if (input.description !== undefined) next.description = input.description
    if (input.recursive !== undefined) next.recursive = input.recursive ? 1 : 0
    if (input.disable_parent_folder_behavior !== undefined) {
      next.disable_parent_folder_behavior = input.disable_parent_folder_behavior ? 1 : 0
    }
    next.updated_at = this.now()
    const { id: _, site_id, path, path_lower, behavior, created_at, ...changes } = next
    await this.behaviors.transaction(async (tx) => {
      await this.requireGroup(tx.db, p, row.behavior, next.value)
      await tx.update(row.id, changes)
      if (row.behavior === 'webhook') await syncEndpoints(tx.db, p.siteId, next.updated_at)
    })
    return toBehaviorJson(next)
  }

  async remove(p: Principal, id: number): Promise<void> {
    const row = await this.managed(p, id)
    await this.behaviors.transaction(async (tx) => {
      await tx.remove(row.id)
      if (row.behavior === 'webhook') await syncEndpoints(tx.db, p.siteId, this.now())
    })
  }

  /**
   * `POST /behaviors/webhook/test`: who may manage behaviors may send one, and its settings are
   * checked as a webhook behavior's are (errors name the test's own parameters). Returns what the
   * dispatcher sends it with.
   */
  async checkWebhookTest(p: Principal, input: WebhookTestInput): Promise<WebhookTestRequest> {
    await this.scopeOf(p)
    if (input.url === undefined || input.url === null) {
      throw ERRORS.requestParamsRequired('Missing required parameter: url')
    }
    const errors: ModelErrors = {}
    const raw: Record<string, unknown> = { urls: [input.url] }
    for (const k of ['method', 'encoding', 'headers', 'body'] as const) {
      if (input[k] !== undefined && input[k] !== null) raw[k] = input[k]
    }
    const value = checkValue('webhook', raw, errors, this.guard, undefined)
    const operation =
      input.action === undefined || input.action === null ? 'Test' : testOperationOf(input.action)
    if (operation === null) {
      addModelError(
        errors,
        'action',
        `must be Test or one of ${WEBHOOK_BEHAVIOR_TRIGGERS.join(', ')} (the operation the test names)`,
      )
    }
    if (Object.keys(errors).length) {
      // The test's parameters are the value's fields under their own names (`urls` is its `url`).
      const own: ModelErrors = {}
      for (const [k, v] of Object.entries(errors))
        own[k === 'value.urls' ? 'url' : k.replace(/^value\./, '')] = v
      throw ApiError.modelSave(own)
    }
    const url = (value['urls'] as string[])[0]!
    return {
      url,
      operation: operation!,
      sending: {
        urls: [url],
        method: value['method'] as 'POST' | 'GET',
        encoding: value['encoding'] as 'JSON' | 'XML' | 'RAW',
        headers: value['headers'] as Record<string, string>,
        body: value['body'] as Record<string, string>,
        verificationToken: null,
      },
    }
  }

  // ---------- internals ----------

  /** A `create_user_folders` value's `group_id` must name a group of the site (422 otherwise). */
  private async requireGroup(db: Kysely<Database>, p: Principal, type: string, value: string): Promise<void> {
    if (type !== 'create_user_folders') return
    const groupId = groupOf(JSON.parse(value) as Record<string, unknown>)
    if (groupId === null) return
    if (!this.userFolders || !(await this.userFolders.groupExists(db, p.siteId, groupId))) {
      throw ApiError.modelSave({ 'value.group_id': [`names no group of the site (no group ${groupId})`] })
    }
  }

  /** The value as JSON text, checked for its type; problems go to `errors`. */
  private checkedValue(
    type: BehaviorType,
    raw: unknown,
    errors: ModelErrors,
    stored: Record<string, unknown> | undefined,
  ): string {
    let value = raw
    if (typeof raw === 'string') {
      try {
        value = raw.trim() === '' ? {} : JSON.parse(raw)
      } catch {
        addModelError(errors, 'value', 'must be a JSON object (as an object, or as JSON text)')
        return '{}'
      }
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      addModelError(errors, 'value', 'must be a JSON object (as an object, or as JSON text)')
      return '{}'
    }
    const text = JSON.stringify(
      checkValue(type, value as Record<string, unknown>, errors, this.guard, stored),
    )
    if (Buffer.byteLength(text) > MAX_VALUE_BYTES) {
      addModelError(errors, 'value', `is too large (at most ${MAX_VALUE_BYTES} bytes of JSON)`)
    }
    return text
  }

  private async managed(p: Principal, id: number): Promise<BehaviorRow> {
    const scope = await this.scopeOf(p)
    const row = await this.behaviors.find(p.siteId, id)
    if (!row) throw ERRORS.notFound(`Behavior ${id} not found`)
    reach(scope, row.path)
    return row
  }

  private async scopeOf(p: Principal): Promise<Scope> {
    const keyPath = p.apiKey?.path ? p.apiKey.path : null
    if (isSiteAdmin(p)) return { folders: null, keyPath }
    const folders = await this.permissions.adminFolders(p.siteId, p.user!.id)
    if (folders.length === 0) {
      throw ERRORS.folderAdminPermissionRequired(
        'Only site administrators and folder administrators can manage folder behaviors',
      )
    }
    return { folders, keyPath }
  }
}

/** The operation a test's `action` names: an operation as is, a verb as the operation it most often is. */
function testOperationOf(action: unknown): string | null {
  if (typeof action !== 'string') return null
  if (action === 'Test' || (WEBHOOK_OPERATIONS as readonly string[]).includes(action)) return action
  const verbs: Record<string, string> = {
    create: 'Upload',
    update: 'Upload',
    read: 'Download',
    destroy: 'Delete',
    move: 'Move',
    copy: 'Copy',
  }
  return verbs[action] ?? null
}

/** Refuses a path outside the caller's scope: the key's folder first, then the folders administered. */
function reach(scope: Scope, path: string): void {
  if (scope.keyPath !== null && !isWithin(path, scope.keyPath)) {
    throw ERRORS.apiKeyIsPathRestricted(`This API key is restricted to the folder ${scope.keyPath}`)
  }
  if (scope.folders === null || scope.folders.some((f) => isWithin(path, f))) return
  throw ERRORS.folderAdminPermissionRequired(
    `You do not administer a folder containing ${path === '' ? 'the root folder' : path}`,
  )
}

/** The folders whose behaviors a list shows (undefined: all). */
function roots(scope: Scope): string[] | undefined {
  const key = scope.keyPath
  if (scope.folders === null) return key === null ? undefined : [key]
  const out: string[] = []
  for (const f of scope.folders) {
    if (key === null || isWithin(f, key)) out.push(f)
    else if (isWithin(key, f)) out.push(key)
  }
  return out
}
