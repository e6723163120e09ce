import { ERRORS } from '../../api/error-factories.js'
import { ApiError, addModelError, type ModelErrors } from '../../api/errors.js'
import { mapPage, type Page } from '../../api/list-spec.js'
import { normalizePath } from '../../api/paths.js'
import { refuseChangedReadOnly } from '../../api/read-only-fields.js'
import { IdentityCache } from '../../identity/identity-cache.js'
import { isSiteAdmin, type Principal } from '../../identity/principal.js'
import { randomHex, tokenHash } from '../../security/secrets.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import { contextOf, recordAction } from '../actions/action-recorder.js'
import { readListRequest } from '../list-request.js'
import type { ModuleSettings } from '../settings.js'
import type { UserRepository } from '../users/user-repository.js'
import {
  API_KEY_LIST,
  type ApiKeyJson,
  type CreateApiKeyInput,
  checkPermissionSet,
  currentKeyId,
  expiry,
  READ_ONLY_FIELDS,
  refuseBots,
  renderApiKey,
  type UpdateApiKeyInput,
} from './api-key-model.js'
import type { ApiKeyRepository, ApiKeyRow, ApiKeyWithOwner, KeyOwnerFilter } from './api-key-repository.js'

export {
  API_KEY_LIST,
  type ApiKeyJson,
  type CreateApiKeyInput,
  type UpdateApiKeyInput,
} from './api-key-model.js'

type Row = ApiKeyWithOwner
type Owner = { id: number; username: string }

export class ApiKeyService {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly users: UserRepository,
    private readonly config: ModuleSettings,
    private readonly secrets: SiteSecrets,
    private readonly now: () => number = Date.now,
    private readonly identities: IdentityCache = new IdentityCache(0),
  ) {}

  toJson(row: Row, plainKey?: string): ApiKeyJson {
    return this.render(row, row.username, plainKey)
  }

  private render(row: ApiKeyRow, username: string | null, plainKey?: string): ApiKeyJson {
    return renderApiKey(row, username, this.config.baseUrl, plainKey)
  }

  /** GET /api_keys. `user_id` omitted: a site admin sees every key, anyone else their own. */
  async list(p: Principal, query: Record<string, unknown>): Promise<Page<ApiKeyJson>> {
    refuseBots(p)
    const userId = this.listOwner(p, query['user_id'] as number | undefined)
    const list = await readListRequest(this.secrets, p.siteId, API_KEY_LIST, query, {
      user_id: userId ?? 'all',
    })
    return mapPage(await this.keys.page(p.siteId, userId, list), (r) => this.toJson(r))
  }

  async get(p: Principal, id: number): Promise<ApiKeyJson> {
    refuseBots(p)
    return this.toJson(await this.visible(p, id))
  }

  async create(p: Principal, input: CreateApiKeyInput): Promise<ApiKeyJson> {
    const siteWide = input.site_wide === true
    let owner: Owner | null
    if (siteWide) {
      if (!isSiteAdmin(p))
        throw ERRORS.siteAdminRequired('Only site administrators can create site-wide keys')
      if (input.user_id !== undefined && input.user_id !== 0) {
        throw ERRORS.requestParamsInvalid('A site-wide key has no user: leave user_id out')
      }
      owner = null
    } else {
      owner = await this.resolveOwner(p, input.user_id)
    }
    const errors: ModelErrors = {}
    const permissionSet = checkPermissionSet(input.permission_set ?? 'full', siteWide, errors)
    const now = this.now()
    const expiresAt = expiry(input.expires_at, now, errors)
    // The root folder ('', '/') is no restriction at all: store it as none, so no check mistakes it for one.
    const path = input.path === undefined ? null : normalizePath(input.path) || null
    if (siteWide && path) addModelError(errors, 'path', 'must be empty for a site-wide key')
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)

    const key = randomHex(32)
    const row = await this.keys.transaction(async (tx) => {
      const inserted = await tx.insert({
        site_id: p.siteId,
        user_id: owner?.id ?? null,
        key_hash: tokenHash(key),
        name: input.name ?? null,
        description: input.description ?? null,
        permission_set: permissionSet,
        path,
        platform: null,
        expires_at: expiresAt ?? null,
        last_use_at: null,
        created_at: now,
        updated_at: now,
      })
      const full: Row = { ...inserted, username: owner?.username ?? null }
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'api_key_create',
          display: `Created ${this.toJson(full).descriptive_label}`,
          path: path ?? '',
          targets: [{ type: 'api_key', id: full.id, ...(full.name ? { name: full.name } : {}) }],
        },
        now,
      )
      return full
    })
    return this.toJson(row, key)
  }

  async update(p: Principal, id: number, input: UpdateApiKeyInput): Promise<ApiKeyJson> {
    refuseBots(p)
    const row = await this.visible(p, id)
    refuseChangedReadOnly(input, this.toJson(row), READ_ONLY_FIELDS)
    if (
      input['key'] !== undefined &&
      (typeof input['key'] !== 'string' || tokenHash(input['key']) !== row.key_hash)
    ) {
      throw ERRORS.requestParamsInvalid('key is read-only')
    }
    return this.applyUpdate(p, row, input)
  }

  async remove(p: Principal, id: number): Promise<void> {
    refuseBots(p)
    await this.destroy(p, await this.visible(p, id))
  }

  /** GET /api_key: the key (and owner) authentication has just loaded; no second read. */
  async getCurrent(p: Principal): Promise<ApiKeyJson> {
    currentKeyId(p)
    return this.render(p.apiKey!, p.user?.username ?? null)
  }

  /** PATCH /api_key. A key that is not `full` may not change its own permission set (no escalation). */
  async updateCurrent(p: Principal, input: UpdateApiKeyInput): Promise<ApiKeyJson> {
    const row = await this.keys.find(p.siteId, currentKeyId(p))
    if (!row) throw ERRORS.apiKeyNotFound('The API key no longer exists')
    if (
      input.permission_set !== undefined &&
      input.permission_set !== row.permission_set &&
      row.permission_set !== 'full'
    ) {
      throw ERRORS.insufficientPermissionForParams(
        'Only a key with permission set "full" may change its own permission set',
      )
    }
    return this.applyUpdate(p, row, input)
  }

  async removeCurrent(p: Principal): Promise<void> {
    const row = await this.keys.find(p.siteId, currentKeyId(p))
    if (!row) throw ERRORS.apiKeyNotFound('The API key no longer exists')
    await this.destroy(p, row)
  }

  // ---------- internals ----------

  /** The key if the caller may see it: site admins see all, others only their own. */
  private async visible(p: Principal, id: number): Promise<Row> {
    const row = await this.keys.find(p.siteId, id)
    if (!row) throw ERRORS.apiKeyNotFound(`API key ${id} not found`)
    if (!isSiteAdmin(p) && row.user_id !== p.user?.id) {
      throw ERRORS.siteAdminRequired('Only site administrators can manage other users’ keys')
    }
    return row
  }

  /** `user_id` as the route's schema validated it (an integer ≥ 0), or undefined. */
  private listOwner(p: Principal, n: number | undefined): KeyOwnerFilter {
    if (n === undefined) return isSiteAdmin(p) ? undefined : p.user!.id
    if (n === 0) return p.user ? p.user.id : 'site-wide'
    if (n !== p.user?.id && !isSiteAdmin(p)) {
      throw ERRORS.userIdWithoutSiteAdmin('Only site administrators can name another user_id')
    }
    return n
  }

  /** The key's owner, with the username its label shows. */
  private async resolveOwner(p: Principal, userId: number | undefined): Promise<Owner> {
    if (userId === undefined || userId === 0) {
      if (!p.user) throw ERRORS.userRequired('A site-wide key must name user_id, or ask for site_wide: true')
      return { id: p.user.id, username: p.user.username }
    }
    if (userId !== p.user?.id && !isSiteAdmin(p)) {
      throw ERRORS.userIdWithoutSiteAdmin('Only site administrators can create keys for other users')
    }
    const user = await this.users.find(p.siteId, userId)
    if (!user) throw ERRORS.userNotFound(`User ${userId} not found`)
    return { id: user.id, username: user.username }
  }

  private async applyUpdate(p: Principal, row: Row, input: UpdateApiKeyInput): Promise<ApiKeyJson> {
    const errors: ModelErrors = {}
    const now = this.now()
    const patch: Partial<ApiKeyRow> = {}
    if (input.permission_set !== undefined)
      patch.permission_set = checkPermissionSet(input.permission_set, row.user_id === null, errors)
    const expiresAt = expiry(input.expires_at, now, errors)
    if (expiresAt !== undefined) patch.expires_at = expiresAt
    if (input.name !== undefined) patch.name = input.name
    if (input.description !== undefined) patch.description = input.description
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)
    const changed = Object.keys(patch)
    if (changed.length === 0) return this.toJson(row)
    patch.updated_at = now
    const updated = await this.keys.transaction(async (tx) => {
      await tx.update(row.id, patch)
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'api_key_update',
          display: `Updated ${this.toJson(row).descriptive_label} (${changed.join(', ')})`,
          path: row.path ?? '',
          targets: [{ type: 'api_key', id: row.id, ...(row.name ? { name: row.name } : {}) }],
        },
        now,
      )
      return tx.get(p.siteId, row.id)
    })
    this.identities.clear()
    return this.toJson(updated)
  }

  private async destroy(p: Principal, row: Row): Promise<void> {
    const now = this.now()
    await this.keys.transaction(async (tx) => {
      await tx.delete(row.id)
      await recordAction(
        tx.db,
        contextOf(p),
        {
          action: 'api_key_destroy',
          display: `Deleted ${this.toJson(row).descriptive_label}`,
          path: row.path ?? '',
          targets: [{ type: 'api_key', id: row.id, ...(row.name ? { name: row.name } : {}) }],
        },
        now,
      )
    })
    this.identities.clear()
  }
}
