import { formatDateTime, parseDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import { addModelError, type ModelErrors } from '../../api/errors.js'
import type { ListSpec } from '../../api/list-spec.js'
import { PERMISSION_SETS, type PermissionSet, type Principal } from '../../identity/principal.js'
import type { ApiKeyRow } from './api-key-repository.js'

/** The ApiKey resource as the API shows it, its inputs, and the rules that need no database. */

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
export const READ_ONLY_FIELDS = [
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

/** One fixed object shape (no spreads): this runs on every GET /api_key. */
export function renderApiKey(
  row: ApiKeyRow,
  username: string | null,
  baseUrl: string,
  plainKey?: string,
): ApiKeyJson {
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
    url: baseUrl,
    user_id: row.user_id,
  }
  // Only the POST that creates a key shows it.
  if (plainKey !== undefined) json.key = plainKey
  return json
}

/** `expires_at` as given: undefined (unchanged), null (never) or a time that must be in the future. */
export function expiry(
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

/** Shared/Bot users (self_managed false) are refused on /api_keys by id and list (decisions.md). */
export function refuseBots(p: Principal): void {
  if (p.user && p.user.self_managed === 0) {
    throw ERRORS.selfManagedRequired('Shared/Bot users cannot list or manage keys by id')
  }
}

export function currentKeyId(p: Principal): number {
  if (!p.apiKey) {
    throw ERRORS.mustAuthenticateWithApiKey('This endpoint needs the request to be made with an API key')
  }
  return p.apiKey.id
}

export function checkPermissionSet(value: string, siteWide: boolean, errors: ModelErrors): PermissionSet {
  if (!(PERMISSION_SETS as readonly string[]).includes(value)) {
    addModelError(errors, 'permission_set', `must be one of ${PERMISSION_SETS.join(', ')}`)
    return 'full'
  }
  if (siteWide && value !== 'full')
    addModelError(errors, 'permission_set', 'must be full for a site-wide key')
  return value as PermissionSet
}
