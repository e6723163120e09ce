import { formatDateTime, parseDateTime } from '../../api/datetime.js'
import { addModelError, type ModelErrors } from '../../api/errors.js'
import type { ListSpec } from '../../api/list-spec.js'
import type { BundlePathJson, BundleRow } from './bundle-repository.js'

/** The Bundle resource (a share link) as the API shows it, its inputs, and the checks that need no database. */

export type { BundlePathJson }

export interface BundleJson {
  code: string
  color_left: null
  color_link: null
  color_text: null
  color_top: null
  color_top_text: null
  url: string
  description: string | null
  expires_at: string | null
  password_protected: boolean
  permissions: string
  preview_only: boolean
  require_registration: boolean
  require_share_recipient: boolean
  require_logout: boolean
  clickwrap_body: null
  form_field_set: null
  skip_name: boolean
  skip_email: boolean
  start_access_on_date: string | null
  skip_company: boolean
  id: number
  created_at: string
  dont_separate_submissions_by_folder: boolean
  max_uses: number | null
  note: string | null
  path_template: string | null
  path_template_time_zone: string | null
  send_email_receipt_to_uploader: boolean
  snapshot_id: null
  user_id: number | null
  username: string | null
  clickwrap_id: null
  inbox_id: null
  watermark_attachment: null
  watermark_value: null
  has_inbox: boolean
  dont_allow_folders_in_uploads: boolean
  /** Shown on show, create and update; not in lists. */
  paths?: string[]
  bundlepaths?: BundlePathJson[]
}

/** The settings a create or update may give (hosted-only fields are accepted and ignored). */
export interface BundleSettingsInput {
  paths?: string[]
  password?: string | null
  code?: string
  description?: string | null
  note?: string | null
  expires_at?: string | null
  start_access_on_date?: string | null
  max_uses?: number | null
  permissions?: string
  require_registration?: boolean
  require_share_recipient?: boolean
  skip_name?: boolean
  skip_email?: boolean
  skip_company?: boolean
  path_template?: string | null
  path_template_time_zone?: string | null
  dont_separate_submissions_by_folder?: boolean
  send_email_receipt_to_uploader?: boolean
  dont_allow_folders_in_uploads?: boolean
  /** Read-only echoes and ignored hosted-only fields (what the SDK's `save()` sends back). */
  [other: string]: unknown
}

export interface CreateBundleInput extends BundleSettingsInput {
  /** 0 or absent: the caller. */
  user_id?: number
  paths: string[]
}

/** What `PATCH /bundles/{id}` shows but cannot change: passes only as an echo of the shown value. */
export const READ_ONLY_FIELDS = [
  'url',
  'password_protected',
  'preview_only',
  'created_at',
  'user_id',
  'username',
]

export const BUNDLE_PERMISSIONS = ['read', 'write', 'read_write', 'preview_only'] as const
/** Permissions that let recipients upload: the creator must be able to write to each path too. */
export const WRITING_PERMISSIONS = new Set(['write', 'read_write'])

export const CODE_PATTERN = /^[A-Za-z0-9_-]{4,100}$/

// Bundles that never expire sort after every dated one.
const NEVER = 8_640_000_000_000_000

export const BUNDLE_LIST: ListSpec = {
  name: 'bundles',
  idColumn: 'bundles.id',
  sort: { expires_at: { column: 'bundles.expires_at', type: 'datetime', nullsAs: NEVER } },
  filter: {
    created_at: { column: 'bundles.created_at', type: 'datetime' },
    expires_at: { column: 'bundles.expires_at', type: 'datetime' },
    code: { column: 'bundles.code', type: 'string' },
    user_id: { column: 'bundles.user_id', type: 'integer' },
  },
}

/** The columns of the settings an input gives, checked; every problem is added to `errors`. */
export function bundleSettings(input: BundleSettingsInput, errors: ModelErrors): Partial<BundleRow> {
  const out: Partial<BundleRow> = {}
  if (input.code !== undefined) {
    if (!CODE_PATTERN.test(input.code)) {
      addModelError(errors, 'code', 'must be 4 to 100 letters, digits, "-" or "_"')
    }
    out.code = input.code
    out.code_lower = input.code.toLowerCase()
  }
  if (input.permissions !== undefined) {
    if (!(BUNDLE_PERMISSIONS as readonly string[]).includes(input.permissions)) {
      addModelError(errors, 'permissions', `must be one of ${BUNDLE_PERMISSIONS.join(', ')}`)
    }
    out.permissions = input.permissions
  }
  if (input.max_uses !== undefined) {
    if (input.max_uses !== null && input.max_uses < 1) addModelError(errors, 'max_uses', 'must be at least 1')
    out.max_uses = input.max_uses
  }
  for (const f of ['expires_at', 'start_access_on_date'] as const) {
    const v = input[f]
    if (v !== undefined) out[f] = v === null || v === '' ? null : parseDateTime(v, f)
  }
  for (const f of ['description', 'note', 'path_template', 'path_template_time_zone'] as const) {
    const v = input[f]
    if (v !== undefined) out[f] = v === null || v === '' ? null : v
  }
  for (const f of FLAGS) {
    const v = input[f]
    if (v !== undefined) out[f] = v ? 1 : 0
  }
  return out
}

const FLAGS = [
  'require_registration',
  'require_share_recipient',
  'skip_name',
  'skip_email',
  'skip_company',
  'dont_separate_submissions_by_folder',
  'send_email_receipt_to_uploader',
  'dont_allow_folders_in_uploads',
] as const

/**
 * The dates of a bundle as it would be after a change: an expiry that changed must be in the
 * future, and access may not start after the bundle expires.
 */
export function checkDates(
  after: Pick<BundleRow, 'expires_at' | 'start_access_on_date'>,
  expiryChanged: boolean,
  now: number,
  errors: ModelErrors,
): void {
  if (expiryChanged && after.expires_at !== null && after.expires_at <= now) {
    addModelError(errors, 'expires_at', 'must be in the future')
  }
  if (
    after.expires_at !== null &&
    after.start_access_on_date !== null &&
    after.start_access_on_date > after.expires_at
  ) {
    addModelError(errors, 'start_access_on_date', 'must not be after expires_at')
  }
}

export function renderBundle(
  r: BundleRow & { username: string | null },
  baseUrl: string,
  paths?: BundlePathJson[],
): BundleJson {
  const json: BundleJson = {
    code: r.code,
    color_left: null,
    color_link: null,
    color_text: null,
    color_top: null,
    color_top_text: null,
    url: `${baseUrl}/f/${encodeURIComponent(r.code)}`,
    description: r.description,
    expires_at: formatDateTime(r.expires_at),
    password_protected: r.password_hash !== null,
    permissions: r.permissions,
    preview_only: r.permissions === 'preview_only',
    require_registration: r.require_registration === 1,
    require_share_recipient: r.require_share_recipient === 1,
    require_logout: false,
    clickwrap_body: null,
    form_field_set: null,
    skip_name: r.skip_name === 1,
    skip_email: r.skip_email === 1,
    start_access_on_date: formatDateTime(r.start_access_on_date),
    skip_company: r.skip_company === 1,
    id: r.id,
    created_at: formatDateTime(r.created_at)!,
    dont_separate_submissions_by_folder: r.dont_separate_submissions_by_folder === 1,
    max_uses: r.max_uses,
    note: r.note,
    path_template: r.path_template,
    path_template_time_zone: r.path_template_time_zone,
    send_email_receipt_to_uploader: r.send_email_receipt_to_uploader === 1,
    snapshot_id: null,
    user_id: r.user_id,
    username: r.username,
    clickwrap_id: null,
    inbox_id: null,
    watermark_attachment: null,
    watermark_value: null,
    has_inbox: false,
    dont_allow_folders_in_uploads: r.dont_allow_folders_in_uploads === 1,
  }
  if (paths) {
    json.paths = paths.map((p) => p.path)
    json.bundlepaths = paths
  }
  return json
}
