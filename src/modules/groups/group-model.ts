import { ERRORS } from '../../api/error-factories.js'
import type { ListSpec } from '../../api/list-spec.js'
import type { GroupRow, MemberRow } from './group-repository.js'

/** The Group resource (Files.com fields). */
export interface GroupJson {
  id: number
  name: string
  notes: string | null
  user_ids: string
  admin_ids: string
  usernames: string
  allowed_ips: string | null
  ftp_permission: boolean
  sftp_permission: boolean
  dav_permission: boolean
  restapi_permission: boolean
  site_id: number
}

/** The GroupUser resource: one membership. */
export interface GroupUserJson {
  id: number
  group_id: number
  group_name: string
  user_id: number
  usernames: string
  admin: boolean
}

export interface GroupInput {
  name?: string | undefined
  notes?: string | null | undefined
  user_ids?: string | undefined
  admin_ids?: string | undefined
  allowed_ips?: string | null | undefined
  ftp_permission?: boolean | undefined
  sftp_permission?: boolean | undefined
  dav_permission?: boolean | undefined
  restapi_permission?: boolean | undefined
}

export interface GroupUserInput {
  group_id?: number | undefined
  user_id?: number | undefined
  admin?: boolean | undefined
}

export const GROUP_LIST: ListSpec = {
  name: 'groups',
  idColumn: 'groups.id',
  sort: {
    // Names are unique case-insensitively, so they sort that way too.
    name: { column: 'groups.name_lower', type: 'string' },
    site_id: { column: 'groups.site_id', type: 'integer' },
  },
  filter: {
    name: { column: 'groups.name', type: 'string' },
  },
}

export const GROUP_USER_LIST: ListSpec = {
  name: 'group_users',
  idColumn: 'group_users.id',
  sort: {},
  filter: {},
}

export function toGroupJson(row: GroupRow, members: MemberRow[]): GroupJson {
  return {
    id: row.id,
    name: row.name,
    notes: row.notes,
    user_ids: members.map((m) => m.user_id).join(','),
    admin_ids: members
      .filter((m) => m.admin === 1)
      .map((m) => m.user_id)
      .join(','),
    usernames: members.map((m) => m.username).join(','),
    allowed_ips: row.allowed_ips,
    ftp_permission: row.ftp_permission === 1,
    sftp_permission: row.sftp_permission === 1,
    dav_permission: row.dav_permission === 1,
    restapi_permission: row.restapi_permission === 1,
    site_id: row.site_id,
  }
}

export function toGroupUserJson(row: MemberRow): GroupUserJson {
  return {
    id: row.id,
    group_id: row.group_id,
    group_name: row.group_name,
    user_id: row.user_id,
    usernames: row.username,
    admin: row.admin === 1,
  }
}

/** `user_ids` / `admin_ids`: user ids separated by commas (blank: none), each once. */
export function parseIds(field: string, raw: string): number[] {
  const parts = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
  const ids = parts.map(Number)
  if (!parts.every((s) => /^[0-9]{1,15}$/.test(s)) || ids.some((n) => n < 1)) {
    throw ERRORS.requestParamsInvalid(`${field} must be user ids separated by commas`)
  }
  return [...new Set(ids)]
}
