/** A user as GET /users gives it. */
export interface User {
  id: number
  username: string
  name: string | null
  email: string | null
  site_admin: boolean
  /** Reads what a site admin reads, changes nothing (site_admin wins). */
  readonly_site_admin?: boolean
  self_managed: boolean
  disabled: boolean
  created_at: string
  last_login_at: string | null
  /** The next sign-in can only change the password. */
  require_password_change?: boolean
  /** `use_system_setting`, `always_require` or `never_require`. */
  require_2fa?: string
  ftp_permission: boolean
  sftp_permission: boolean
  dav_permission: boolean
  restapi_permission: boolean
  allowed_ips: string | null
  authenticate_until: string | null
}

/** A folder permission as GET /permissions gives it. */
export interface Permission {
  id: number
  path: string
  /** null for a group's permission (then group_id and group_name are set). */
  user_id: number | null
  username: string | null
  group_id: number | null
  group_name: string | null
  permission: string
}

/** Whom a permission is for: the user, or the group (whose members all have it). */
export function granteeOf(p: Permission): string {
  return p.group_id !== null ? `group ${p.group_name ?? p.group_id}` : (p.username ?? `user #${p.user_id}`)
}

/** The permissions the server grants (docs/decisions.md), with what each lets a user do. */
export const PERMISSIONS: [string, string][] = [
  ['full', 'Full: read, upload, delete and history'],
  ['readonly', 'Read only: list, download and history'],
  ['writeonly', 'Write only: upload'],
  ['list', 'List only: see names'],
  ['history', 'History: list and see the history'],
  ['admin', 'Folder admin: full, and grant permissions inside'],
]

export function permissionLabel(p: string): string {
  return PERMISSIONS.find(([v]) => v === p)?.[1].split(':')[0] ?? p
}
