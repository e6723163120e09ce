import { formatDateTime, parseDateTime } from '../../api/datetime.js'
import { addModelError, type ModelErrors } from '../../api/errors.js'
import type { UserRow } from '../../identity/principal.js'
import { checkAllowedIps, ipAllowed } from './allowed-ips.js'

const RIGHTS = ['ftp_permission', 'sftp_permission', 'dav_permission', 'restapi_permission'] as const

/** A user's access fields as a create or update gives them (the Files.com User fields). */
export interface UserAccessInput {
  ftp_permission?: boolean | undefined
  sftp_permission?: boolean | undefined
  dav_permission?: boolean | undefined
  restapi_permission?: boolean | undefined
  allowed_ips?: string | null | undefined
  authenticate_until?: string | null | undefined
  billing_permission?: boolean | undefined
  readonly_site_admin?: boolean | undefined
}

export const USER_ACCESS_FIELDS = [
  ...RIGHTS,
  'allowed_ips',
  'authenticate_until',
  'billing_permission',
  'readonly_site_admin',
] as const

/** The access fields of the User resource. */
export interface UserAccessJson {
  ftp_permission: boolean
  sftp_permission: boolean
  dav_permission: boolean
  restapi_permission: boolean
  allowed_ips: string | null
  authenticate_until: string | null
  billing_permission: boolean
  readonly_site_admin: boolean
}

export function userAccessJson(row: UserRow): UserAccessJson {
  return {
    ftp_permission: row.ftp_permission === 1,
    sftp_permission: row.sftp_permission === 1,
    dav_permission: row.dav_permission === 1,
    restapi_permission: row.restapi_permission === 1,
    allowed_ips: row.allowed_ips,
    authenticate_until: formatDateTime(row.authenticate_until),
    billing_permission: row.billing_permission === 1,
    readonly_site_admin: row.readonly_site_admin === 1,
  }
}

type AccessColumns = Pick<UserRow, (typeof USER_ACCESS_FIELDS)[number]>

/** The columns of a new user, checked (problems go into `errors`). */
export function newUserAccess(input: UserAccessInput, errors: ModelErrors): AccessColumns {
  const bit = (b: boolean | undefined, dflt: number) => (b === undefined ? dflt : b ? 1 : 0)
  return {
    ftp_permission: bit(input.ftp_permission, 1),
    sftp_permission: bit(input.sftp_permission, 1),
    dav_permission: bit(input.dav_permission, 1),
    restapi_permission: bit(input.restapi_permission, 1),
    allowed_ips: checkAllowedIps(input.allowed_ips, 'allowed_ips', errors),
    authenticate_until: until(input.authenticate_until),
    billing_permission: bit(input.billing_permission, 0),
    readonly_site_admin: bit(input.readonly_site_admin, 0),
  }
}

/**
 * What an update changes of a user's access fields, checked (problems go into `errors`).
 * `selfIp`: the caller is changing their own record from this address, and may not lock
 * themselves out of the API and the web interface.
 */
export function userAccessPatch(
  row: UserRow,
  input: UserAccessInput,
  selfIp: string | null,
  now: number,
  errors: ModelErrors,
): Partial<AccessColumns> {
  const wanted = newUserAccess(input, errors)
  const patch: Partial<AccessColumns> = {}
  for (const k of USER_ACCESS_FIELDS) {
    if (input[k] !== undefined && wanted[k] !== row[k]) (patch as Record<string, unknown>)[k] = wanted[k]
  }
  if (selfIp !== null) {
    if (patch.restapi_permission === 0) {
      addModelError(errors, 'restapi_permission', 'cannot be removed from your own user')
    }
    if (patch.allowed_ips !== undefined && !ipAllowed(patch.allowed_ips, selfIp)) {
      addModelError(errors, 'allowed_ips', `must include your own address (${selfIp})`)
    }
    if (
      patch.authenticate_until !== undefined &&
      patch.authenticate_until !== null &&
      patch.authenticate_until <= now
    ) {
      addModelError(errors, 'authenticate_until', 'cannot be in the past for your own user')
    }
  }
  return patch
}

/** The access fields an input changes (what a user who is not a site admin may not do). */
export function changedAccessFields(row: UserRow, input: UserAccessInput): string[] {
  const patch = userAccessPatch(row, input, null, 0, {})
  return Object.keys(patch)
}

function until(value: string | null | undefined): number | null {
  if (value === undefined || value === null || value.trim() === '') return null
  return parseDateTime(value, 'authenticate_until')
}
