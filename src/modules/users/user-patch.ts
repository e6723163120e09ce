import { ERRORS } from '../../api/error-factories.js'
import { ApiError, addModelError, type ModelErrors } from '../../api/errors.js'
import type { UserRow } from '../../identity/principal.js'
import { changedAccessFields, USER_ACCESS_FIELDS, type UserAccessInput } from '../access/user-access.js'
import { checkValidityDays } from '../passwords/password-rules.js'
import { blankToNull, checkEmail, checkPassword, checkUsername } from './user-model.js'

export interface CreateUserInput extends UserAccessInput {
  username: string
  password?: string | undefined
  password_confirmation?: string | undefined
  name?: string | null | undefined
  email?: string | null | undefined
  site_admin?: boolean | undefined
  self_managed?: boolean | undefined
  disabled?: boolean | undefined
  attachments_permission?: boolean | undefined
  /** The same flag as attachments_permission (Files.com's newer name); if both are given they must agree. */
  bundle_permission?: boolean | undefined
  /** Site admins: the user's next sign-in can only change the password. */
  require_password_change?: boolean | undefined
  /** Site admins: days the user's password stays valid; null or 0 for the site's rule only. */
  password_validity_days?: number | null | undefined
  /** `use_system_setting`, `always_require` or `never_require` (checked by the route's schema). */
  require_2fa?: string | undefined
}

export type UpdateUserInput = Partial<CreateUserInput> & {
  /** Read-only: accepted only as an echo of the current value (what the SDKs' `save()` sends). */
  created_at?: unknown
  last_login_at?: unknown
  password_set_time?: unknown
  password_set_at?: unknown
  password_expired?: unknown
  password_expire_at?: unknown
  days_remaining_until_password_expire?: unknown
  active_2fa?: unknown
  type_of_2fa?: unknown
}

export const READ_ONLY_FIELDS = [
  'created_at',
  'last_login_at',
  'password_set_time',
  'password_set_at',
  'password_expired',
  'password_expire_at',
  'days_remaining_until_password_expire',
  'active_2fa',
  'type_of_2fa',
] as const

/** What a user who is not a site admin may change on their own record. */
const SELF_SERVICE_FIELDS = new Set(['name', 'email', 'password', 'password_confirmation'])

export const bit = (b: boolean) => (b ? 1 : 0)

/**
 * What a user who is not a site admin may not change: any field but their own name, e-mail and
 * password (unchanged values pass: the Files.com SDK's `save()` sends every attribute back), and
 * not the password of a Shared/Bot user.
 */
export function refuseSelfServiceLimits(row: UserRow, input: UpdateUserInput): void {
  const current: Record<string, unknown> = {
    username: row.username,
    site_admin: row.site_admin === 1,
    self_managed: row.self_managed === 1,
    disabled: row.disabled === 1,
    attachments_permission: row.attachments_permission === 1,
    bundle_permission: row.attachments_permission === 1,
    require_password_change: row.require_password_change === 1,
    password_validity_days: row.password_validity_days,
    require_2fa: row.require_2fa,
  }
  const access = new Set<string>(USER_ACCESS_FIELDS)
  const refused = Object.keys(input).filter((k) => {
    const v = input[k as keyof UpdateUserInput]
    const readOnly = (READ_ONLY_FIELDS as readonly string[]).includes(k)
    return v !== undefined && !SELF_SERVICE_FIELDS.has(k) && !readOnly && !access.has(k) && v !== current[k]
  })
  // Unchanged access fields pass however they are written (a date-time in another form, spaces).
  refused.push(...changedAccessFields(row, input))
  if (refused.length) {
    throw ERRORS.siteAdminRequired(`Only site administrators can change ${refused.join(', ')}`)
  }
  if (input.password !== undefined && row.self_managed === 0) {
    throw ERRORS.selfManagedRequired('The password of a Shared/Bot user is managed by site administrators')
  }
}

/**
 * The columns an update changes, checked: only what differs from the row goes in. `self`: the
 * caller is changing their own record, which may not lose its site admin flag or be disabled.
 * Throws 422 with every field's problem at once.
 */
export function userPatch(
  row: UserRow,
  input: UpdateUserInput,
  self: boolean,
  errors: ModelErrors = {},
): Partial<UserRow> {
  const patch: Partial<UserRow> = {}
  if (input.username !== undefined) {
    checkUsername(input.username, errors)
    if (input.username !== row.username) {
      patch.username = input.username
      patch.username_lower = input.username.toLowerCase()
    }
  }
  if (input.password !== undefined) checkPassword(input.password, input.password_confirmation, errors)
  if (input.name !== undefined && blankToNull(input.name) !== row.name) patch.name = blankToNull(input.name)
  if (input.email !== undefined) {
    const email = checkEmail(input.email, errors)
    if (email !== row.email) patch.email = email
  }
  if (input.site_admin !== undefined && bit(input.site_admin) !== row.site_admin) {
    if (self && !input.site_admin) addModelError(errors, 'site_admin', 'cannot be removed from your own user')
    patch.site_admin = bit(input.site_admin)
  }
  if (input.self_managed !== undefined && bit(input.self_managed) !== row.self_managed)
    patch.self_managed = bit(input.self_managed)
  if (input.disabled !== undefined && bit(input.disabled) !== row.disabled) {
    if (self && input.disabled) addModelError(errors, 'disabled', 'cannot be set on your own user')
    patch.disabled = bit(input.disabled)
  }
  const mayShare = attachmentsPermission(input, errors)
  if (mayShare !== undefined && bit(mayShare) !== row.attachments_permission)
    patch.attachments_permission = bit(mayShare)
  if (
    input.require_password_change !== undefined &&
    bit(input.require_password_change) !== row.require_password_change
  )
    patch.require_password_change = bit(input.require_password_change)
  if (input.password_validity_days !== undefined) {
    const days = checkValidityDays(input.password_validity_days, errors)
    if (days !== undefined && days !== row.password_validity_days) patch.password_validity_days = days
  }
  if (input.require_2fa !== undefined && input.require_2fa !== row.require_2fa)
    patch.require_2fa = input.require_2fa
  if (Object.keys(errors).length) throw ApiError.modelSave(errors)
  return patch
}

/** The share-link flag an input sets under either of its names, or undefined. */
export function attachmentsPermission(
  input: Pick<CreateUserInput, 'attachments_permission' | 'bundle_permission'>,
  errors: ModelErrors,
): boolean | undefined {
  const { attachments_permission: a, bundle_permission: b } = input
  if (a !== undefined && b !== undefined && a !== b) {
    addModelError(errors, 'bundle_permission', 'must equal attachments_permission (they are the same flag)')
  }
  return a ?? b
}
