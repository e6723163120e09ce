import type { Kysely, Selectable } from 'kysely'
import { formatDateTime, parseDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import { ApiError, addModelError, type ModelErrors } from '../../api/errors.js'
import { toPage } from '../../api/list-cursor.js'
import { parseListQuery } from '../../api/list-query.js'
import type { ListSpec, Page } from '../../api/list-spec.js'
import { refuseChangedReadOnly } from '../../api/read-only-fields.js'
import type { Config } from '../../config.js'
import { applyListQuery } from '../../db/list-sql.js'
import type { ApiKeysTable, Database } from '../../db/schema.js'
import { randomHex, tokenHash } from '../../security/secrets.js'
import { contextOf, recordAction } from '../actions/action-recorder.js'
import { IdentityCache } from '../auth/identity-cache.js'
import { isSiteAdmin, PERMISSION_SETS, type PermissionSet, type Principal } from '../auth/principal.js'
import { normalizePath } from '../paths.js'
import type { SiteSecrets } from '../sites/site-secrets.js'

type ApiKeyRow = Selectable<ApiKeysTable>
type Row = ApiKeyRow & { username: string | null }
type Owner = { id: number; username: string }

export interface ApiKeyJson {
  id: number
  descriptive_label: string
  description: string | null
  created_at: string
  expires_at: string | null
  key?: string
  last_use_at: string | null
  name: string | null
  path: string | null
  permission_set: string
  platform: string | null
  url: string
  user_id: number | null
}

export interface CreateApiKeyInput {
  user_id?: number
  name?: string
  description?: string
  expires_at?: string | null
  permission_set?: string
  path?: string
  site_wide?: boolean
}

export interface UpdateApiKeyInput {
  name?: string | null
  description?: string | null
  expires_at?: string | null
  permission_set?: string
  /** Read-only fields, accepted only as echoes of the current values (what `save()` sends). */
  [readOnly: string]: unknown
}

/** What `PATCH /api_keys/{id}` shows but cannot change (`key` is checked against its hash). */
const READ_ONLY_FIELDS = [
  'descriptive_label',
  'created_at',
  'last_use_at',
  'path',
  'platform',
  'url',
  'user_id',
]

// Keys that never expire sort after every dated key.
const NEVER = 8_640_000_000_000_000

export const API_KEY_LIST: ListSpec = {
  name: 'api_keys',
  idColumn: 'api_keys.id',
  sort: { expires_at: { column: 'api_keys.expires_at', type: 'datetime', nullsAs: NEVER } },
  filter: { expires_at: { column: 'api_keys.expires_at', type: 'datetime' } },
}

export class ApiKeyService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly config: Config,
    private readonly secrets: SiteSecrets,
    private readonly now: () => number = Date.now,
    private readonly identities: IdentityCache = new IdentityCache(0),
  ) {}

  toJson(row: Row, plainKey?: string): ApiKeyJson {
    return this.render(row, row.username, plainKey)
  }

  /** One fixed object shape (no spreads): this runs on every GET /api_key. */
  private render(row: ApiKeyRow, username: string | null, plainKey?: string): ApiKeyJson {
    const label =
      row.user_id === null
        ? `Site-wide API key (key ID #${row.id})`
        : `User API key for ${username ?? `user #${row.user_id}`} (key ID #${row.id})`
    const json: ApiKeyJson = {
      id: row.id,
      descriptive_label: label,
      description: row.description,
      created_at: formatDateTime(row.created_at)!,
      expires_at: formatDateTime(row.expires_at),
      last_use_at: formatDateTime(row.last_use_at),
      name: row.name,
      path: row.path,
      permission_set: row.permission_set,
      platform: row.platform,
      url: this.config.baseUrl,
      user_id: row.user_id,
    }
    // Only the POST that creates a key shows it.
    if (plainKey !== undefined) json.key = plainKey
    return json
  }

  /** GET /api_keys. `user_id` omitted: a site admin sees every key, anyone else their own. */
  async list(p: Principal, query: Record<string, unknown>): Promise<Page<ApiKeyJson>> {
    refuseBots(p)
    const userId = this.listOwner(p, query['user_id'] as number | undefined)
    const secret = await this.secrets.signingSecret(p.siteId)
    const lq = parseListQuery(API_KEY_LIST, query, secret, { user_id: userId ?? 'all' })
    let q = this.rows(p.siteId)
    if (userId === 'site-wide') q = q.where('api_keys.user_id', 'is', null)
    else if (userId !== undefined) q = q.where('api_keys.user_id', '=', userId)
    const rows = await applyListQuery(q, API_KEY_LIST, lq).execute()
    const page = toPage(rows, API_KEY_LIST, lq, secret)
    return { ...page, items: page.items.map((r) => this.toJson(r)) }
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
    const expiresAt = this.expiry(input.expires_at, now, errors)
    // The root folder ('', '/') is no restriction at all: store it as none, so no check mistakes it for one.
    const path = input.path === undefined ? null : normalizePath(input.path) || null
    if (siteWide && path) addModelError(errors, 'path', 'must be empty for a site-wide key')
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)

    const key = randomHex(32)
    const row = await this.db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('api_keys')
        .values({
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
        .returningAll()
        .executeTakeFirstOrThrow()
      const full: Row = { ...inserted, username: owner?.username ?? null }
      await recordAction(
        trx,
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
    const row = await this.rows(p.siteId).where('api_keys.id', '=', currentKeyId(p)).executeTakeFirst()
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
    const row = await this.rows(p.siteId).where('api_keys.id', '=', currentKeyId(p)).executeTakeFirst()
    if (!row) throw ERRORS.apiKeyNotFound('The API key no longer exists')
    await this.destroy(p, row)
  }

  // ---------- internals ----------

  private rows(siteId: number, db: Kysely<Database> = this.db) {
    return db
      .selectFrom('api_keys')
      .leftJoin('users', 'users.id', 'api_keys.user_id')
      .selectAll('api_keys')
      .select('users.username as username')
      .where('api_keys.site_id', '=', siteId)
  }

  /** The key if the caller may see it: site admins see all, others only their own. */
  private async visible(p: Principal, id: number): Promise<Row> {
    const row = await this.rows(p.siteId).where('api_keys.id', '=', id).executeTakeFirst()
    if (!row) throw ERRORS.apiKeyNotFound(`API key ${id} not found`)
    if (!isSiteAdmin(p) && row.user_id !== p.user?.id) {
      throw ERRORS.siteAdminRequired('Only site administrators can manage other users’ keys')
    }
    return row
  }

  /** `user_id` as the route's schema validated it (an integer ≥ 0), or undefined. */
  private listOwner(p: Principal, n: number | undefined): number | 'site-wide' | undefined {
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
    const user = await this.db
      .selectFrom('users')
      .select(['id', 'username'])
      .where('site_id', '=', p.siteId)
      .where('id', '=', userId)
      .executeTakeFirst()
    if (!user) throw ERRORS.userNotFound(`User ${userId} not found`)
    return user
  }

  private expiry(
    raw: string | null | undefined,
    now: number,
    errors: ModelErrors,
  ): number | null | undefined {
    if (raw === undefined) return undefined
    if (raw === null || raw === '') return null
    const at = parseDateTime(raw, 'expires_at')
    if (at <= now) addModelError(errors, 'expires_at', 'must be in the future')
    return at
  }

  private async applyUpdate(p: Principal, row: Row, input: UpdateApiKeyInput): Promise<ApiKeyJson> {
    const errors: ModelErrors = {}
    const now = this.now()
    const patch: Partial<ApiKeyRow> = {}
    if (input.permission_set !== undefined)
      patch.permission_set = checkPermissionSet(input.permission_set, row.user_id === null, errors)
    const expiresAt = this.expiry(input.expires_at, now, errors)
    if (expiresAt !== undefined) patch.expires_at = expiresAt
    if (input.name !== undefined) patch.name = input.name
    if (input.description !== undefined) patch.description = input.description
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)
    const changed = Object.keys(patch)
    if (changed.length === 0) return this.toJson(row)
    patch.updated_at = now
    const updated = await this.db.transaction().execute(async (trx) => {
      await trx.updateTable('api_keys').set(patch).where('id', '=', row.id).execute()
      await recordAction(
        trx,
        contextOf(p),
        {
          action: 'api_key_update',
          display: `Updated ${this.toJson(row).descriptive_label} (${changed.join(', ')})`,
          path: row.path ?? '',
          targets: [{ type: 'api_key', id: row.id, ...(row.name ? { name: row.name } : {}) }],
        },
        now,
      )
      return this.rows(p.siteId, trx).where('api_keys.id', '=', row.id).executeTakeFirstOrThrow()
    })
    this.identities.clear()
    return this.toJson(updated)
  }

  private async destroy(p: Principal, row: Row): Promise<void> {
    const now = this.now()
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('api_keys').where('id', '=', row.id).execute()
      await recordAction(
        trx,
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

/** Shared/Bot users (self_managed false) are refused on /api_keys by id and list (decisions.md). */
function refuseBots(p: Principal): void {
  if (p.user && p.user.self_managed === 0) {
    throw ERRORS.selfManagedRequired('Shared/Bot users cannot list or manage keys by id')
  }
}

function currentKeyId(p: Principal): number {
  if (!p.apiKey) {
    throw ERRORS.mustAuthenticateWithApiKey('This endpoint needs the request to be made with an API key')
  }
  return p.apiKey.id
}

function checkPermissionSet(value: string, siteWide: boolean, errors: ModelErrors): PermissionSet {
  if (!(PERMISSION_SETS as readonly string[]).includes(value)) {
    addModelError(errors, 'permission_set', `must be one of ${PERMISSION_SETS.join(', ')}`)
    return 'full'
  }
  if (siteWide && value !== 'full')
    addModelError(errors, 'permission_set', 'must be full for a site-wide key')
  return value as PermissionSet
}
