import { formatDateTime } from '../../api/datetime.js'
import { addModelError, type ModelErrors } from '../../api/errors.js'
import type { ListSpec } from '../../api/list-spec.js'
import type { UserRow } from '../../identity/principal.js'
import { type UserAccessJson, userAccessJson } from '../access/user-access.js'

/** The User resource as the API shows it: never the password or its hash. */
export interface UserJson extends UserAccessJson {
  id: number
  username: string
  name: string | null
  email: string | null
  site_admin: boolean
  self_managed: boolean
  disabled: boolean
  created_at: string
  last_login_at: string | null
  password_set_time: string | null
  /** The same time under the Files.com SDK's name. */
  password_set_at: string | null
  require_password_change: boolean
  password_validity_days: number | null
  password_expired: boolean
  password_expire_at: string | null
  days_remaining_until_password_expire: number | null
  /** May create share links (bundles); `bundle_permission` is the same flag under its newer name. */
  attachments_permission: boolean
  bundle_permission: boolean
  /** Two-factor sign-in: `use_system_setting` (the site's rule), `always_require`, `never_require`. */
  require_2fa: string
  /** The user has a confirmed two-factor method. */
  active_2fa: boolean
  /** The kinds of those methods (`totp`, the only one Wharf has), null without one. */
  type_of_2fa: string | null
}

/** The password's age as the site's rules make it (password-policy.ts); none when unknown. */
export interface PasswordAgeFields {
  password_expired: boolean
  password_expire_at: number | null
  days_remaining_until_password_expire: number | null
}

const NO_EXPIRY: PasswordAgeFields = {
  password_expired: false,
  password_expire_at: null,
  days_remaining_until_password_expire: null,
}

/** `twoFactor`: the user has a confirmed two-factor method (computed, never stored on the user). */
export function toUserJson(row: UserRow, age: PasswordAgeFields = NO_EXPIRY, twoFactor = false): UserJson {
  return {
    id: row.id,
    username: row.username,
    name: row.name,
    email: row.email,
    site_admin: row.site_admin === 1,
    self_managed: row.self_managed === 1,
    disabled: row.disabled === 1,
    created_at: formatDateTime(row.created_at)!,
    last_login_at: formatDateTime(row.last_login_at),
    password_set_time: formatDateTime(row.password_set_at),
    password_set_at: formatDateTime(row.password_set_at),
    require_password_change: row.require_password_change === 1,
    password_validity_days: row.password_validity_days,
    password_expired: age.password_expired,
    password_expire_at: formatDateTime(age.password_expire_at),
    days_remaining_until_password_expire: age.days_remaining_until_password_expire,
    attachments_permission: row.attachments_permission === 1,
    bundle_permission: row.attachments_permission === 1,
    ...userAccessJson(row),
    require_2fa: row.require_2fa,
    active_2fa: twoFactor,
    type_of_2fa: twoFactor ? 'totp' : null,
  }
}

export const USER_LIST: ListSpec = {
  name: 'users',
  idColumn: 'users.id',
  sort: {
    // Usernames are unique case-insensitively, so they sort that way too.
    username: { column: 'users.username_lower', type: 'string' },
    name: { column: 'users.name', type: 'string', nullsAs: '' },
    email: { column: 'users.email', type: 'string', nullsAs: '' },
    created_at: { column: 'users.created_at', type: 'datetime' },
    last_login_at: { column: 'users.last_login_at', type: 'datetime', nullsAs: 0 },
    site_admin: { column: 'users.site_admin', type: 'integer' },
  },
  filter: {
    username: { column: 'users.username', type: 'string' },
    name: { column: 'users.name', type: 'string' },
    email: { column: 'users.email', type: 'string' },
    site_admin: { column: 'users.site_admin', type: 'boolean' },
    created_at: { column: 'users.created_at', type: 'datetime' },
  },
}

/** The shortest password any site allows (its `password_min_length` may ask for more). */
export const MIN_PASSWORD_LENGTH = 8
export const MAX_USERNAME_LENGTH = 128
/** The characters of a username (also the Swagger document's pattern). */
export const USERNAME_PATTERN = '^[A-Za-z0-9@._+-]+$'
const USERNAME = new RegExp(USERNAME_PATTERN)
// A shape check only: one @, something on both sides, a dot in the domain, no spaces.
const EMAIL_SHAPE = '[^\\s@]+@[^\\s@.]+(?:\\.[^\\s@.]+)+'
const EMAIL = new RegExp(`^${EMAIL_SHAPE}$`)
/** An e-mail address, or blank for none; spaces around it are dropped. */
export const EMAIL_PATTERN = `^\\s*(?:${EMAIL_SHAPE})?\\s*$`

export function checkUsername(value: string, errors: ModelErrors): void {
  if (value === '') addModelError(errors, 'username', "can't be blank")
  else if (!USERNAME.test(value) || value.length > MAX_USERNAME_LENGTH) {
    addModelError(
      errors,
      'username',
      'may contain only letters, digits and @ . _ + - (at most 128 characters)',
    )
  }
}

/** The confirmation; the password's own rules are the site's (modules/passwords). */
export function checkPassword(password: string, confirmation: string | undefined, errors: ModelErrors): void {
  if (confirmation !== undefined && confirmation !== password)
    addModelError(errors, 'password_confirmation', "doesn't match password")
}

/** Empty means "none"; anything else must look like an address. */
export function checkEmail(value: string | null, errors: ModelErrors): string | null {
  if (value === null || value.trim() === '') return null
  const email = value.trim()
  if (!EMAIL.test(email)) addModelError(errors, 'email', 'is not a valid e-mail address')
  return email
}

export function blankToNull(value: string | null): string | null {
  return value === null || value.trim() === '' ? null : value
}
