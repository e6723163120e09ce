import type { Selectable } from 'kysely'
import { ERRORS } from '../api/error-factories.js'
import type { ApiKeysTable, UsersTable } from '../db/schema.js'
import type { PermissionSet } from './permission-sets.js'

export type UserRow = Selectable<UsersTable>
export type ApiKeyRow = Selectable<ApiKeysTable>

export { PERMISSION_SETS, type PermissionSet } from './permission-sets.js'

/** Interfaces an Action can record (api-spec.md, Action.interface). */
export type Interface = 'web' | 'restapi' | 'robot' | ProtocolInterface

/** The file-transfer front ends; their Actions and webhooks carry these names. */
export type ProtocolInterface = 'sftp' | 'ftp' | 'dav'

/** Who is calling, and through what: every module takes one of these, never a request. */
export interface Principal {
  siteId: number
  /** The user behind the call; null for a site-wide API key. */
  user: UserRow | null
  /** The API key used, if the call was made with one. */
  apiKey: ApiKeyRow | null
  /** sha256 of the session id, if the call was made with a session. */
  sessionHash: string | null
  permissionSet: PermissionSet
  ip: string
  interface: Interface
  /**
   * A session of a user who must use two-factor sign-in and has not enrolled yet: it reaches
   * only the enrolment routes (modules/two-factor).
   */
  twoFactorSetup?: boolean
  /**
   * The few changes a read-only site admin may make (their own password, their own two-factor
   * methods) are made with their own user's rights, not a site admin's (http/plugins/auth.ts).
   */
  ownRightsOnly?: boolean
}

/** What a read-only site admin is told when a change is refused, over any interface. */
export const READ_ONLY_REFUSAL = 'This session is read-only: a read-only site administrator changes nothing'

/**
 * A read-only site admin (`readonly_site_admin`, and not `site_admin`, which wins): reads what a
 * site admin reads, and every session and API key of theirs is read-only. Where that is enforced:
 * the REST API's authentication hook (every change but the few it lets through) and the file core
 * (`FileAccess`: every protocol's writes).
 */
export function isReadOnlyAdmin(user: UserRow | null): boolean {
  return user !== null && user.readonly_site_admin === 1 && user.site_admin !== 1
}

/**
 * Site admins, site-wide keys (no user) and the operator's CLI may administer the whole site;
 * read-only site admins pass too, since nothing they send can change anything.
 */
export function isSiteAdmin(p: Principal): boolean {
  if (p.user === null || p.user.site_admin === 1) return true
  return p.ownRightsOnly !== true && isReadOnlyAdmin(p.user)
}

/** The operator at the `wharf` command line: acts as a site-wide key, recorded as interface robot. */
export function operatorPrincipal(siteId: number): Principal {
  return {
    siteId,
    user: null,
    apiKey: null,
    sessionHash: null,
    permissionSet: 'full',
    ip: '127.0.0.1',
    interface: 'robot',
  }
}

export function requireSiteAdmin(p: Principal): void {
  if (!isSiteAdmin(p)) throw ERRORS.siteAdminRequired('Site administrator permission is required')
}

/** Display name for actions and labels. */
export function actorName(p: Principal): string | null {
  return p.user?.username ?? null
}
