import { ERRORS } from '../../api/error-factories.js'
import { ApiError } from '../../api/errors.js'
import { isWithin } from '../../api/paths.js'
import { isReadOnlyAdmin, type Principal, READ_ONLY_REFUSAL, type UserRow } from '../../identity/principal.js'
import type { PermissionRepository } from '../permissions/permission-repository.js'

/**
 * What a caller may do at a path:
 * - `read`: download a file, see its metadata;
 * - `write`: upload, create folders, be the destination of a copy or move;
 * - `delete`: delete, be the source of a move;
 * - `list`: list a folder's contents;
 * - `history`: read the history of a file or folder;
 * - `admin`: manage the folder's permissions.
 */
export type Capability = 'read' | 'write' | 'delete' | 'list' | 'history' | 'admin'

/** What each folder permission grants, there and everywhere inside. */
const GRANTS: Record<string, Capability[]> = {
  full: ['read', 'write', 'delete', 'list', 'history'],
  readonly: ['read', 'list', 'history'],
  writeonly: ['write'],
  list: ['list'],
  history: ['history', 'list'],
  admin: ['read', 'write', 'delete', 'list', 'history', 'admin'],
}

const REFUSAL: Record<Capability, ApiError['type']> = {
  read: 'not-authorized/read-permission-required',
  list: 'not-authorized/read-permission-required',
  history: 'not-authorized/history-permission-required',
  write: 'not-authorized/write-permission-required',
  delete: 'not-authorized/write-permission-required',
  admin: 'not-authorized/folder-admin-permission-required',
}

/** What a read-only site admin may do anywhere: everything that changes nothing. */
const READS: readonly Capability[] = ['read', 'list', 'history']

const VERB: Record<Capability, string> = {
  read: 'read',
  list: 'list',
  history: 'see the history of',
  write: 'write to',
  delete: 'delete',
  admin: 'administer',
}

/**
 * One caller's reach over the file tree, loaded once per request. Site admins and site-wide keys
 * reach everything; other users what their folder permissions grant. A key restricted to a
 * folder reaches nothing outside it, whoever owns it. A read-only site admin reads everything and
 * changes nothing, whatever the protocol: their writes are refused here with
 * `not-authorized/read-only-session`, which SFTP, FTP and WebDAV answer as their permission error.
 */
export class AccessView {
  constructor(
    /** null: every path, every capability (site admin, site-wide key). */
    private readonly grants: { path: string; caps: Capability[] }[] | null,
    /** The API key's folder restriction, if any. */
    readonly keyPath: string | null,
    /** A read-only site admin: every path, but only the capabilities that change nothing. */
    readonly readOnly = false,
  ) {}

  /** True when nothing but the key's folder restriction limits the caller. */
  get unrestricted(): boolean {
    return this.grants === null && !this.readOnly
  }

  can(path: string, cap: Capability): boolean {
    if (this.keyPath !== null && !isWithin(path, this.keyPath)) return false
    if (this.readOnly) return READS.includes(cap)
    if (this.grants === null) return true
    return this.grants.some((g) => g.caps.includes(cap) && isWithin(path, g.path))
  }

  /** Throws the refusal that names the missing permission (or the key's restriction). */
  require(path: string, cap: Capability): void {
    if (this.keyPath !== null && !isWithin(path, this.keyPath)) {
      throw ERRORS.apiKeyIsPathRestricted(`This API key is restricted to the folder ${this.keyPath}`)
    }
    if (this.readOnly && !READS.includes(cap)) {
      throw ERRORS.readOnlySession(READ_ONLY_REFUSAL)
    }
    if (!this.can(path, cap)) {
      throw new ApiError(
        REFUSAL[cap],
        `You do not have permission to ${VERB[cap]} ${path === '' ? 'the root folder' : path}`,
      )
    }
  }

  /**
   * Either capability will do (history of a path: `read` or `history`). A caller who reaches the
   * path but only to list it or write into it is told the history permission is missing; one who
   * does not reach it at all, the first capability's refusal.
   */
  requireAny(path: string, caps: Capability[]): void {
    if (caps.some((c) => this.can(path, c))) return
    if (caps.includes('history') && (this.can(path, 'list') || this.can(path, 'write'))) {
      throw ERRORS.historyPermissionRequired(
        `You may list or write to ${path === '' ? 'the root folder' : path} but not see its history`,
      )
    }
    this.require(path, caps[0]!)
  }

  /**
   * True when `path` is a folder above something the caller may reach, so it may be entered
   * (listed) to get there even without the list permission on it.
   */
  leadsTo(path: string): boolean {
    const lower = path.toLowerCase()
    return this.roots().some((r) => r.toLowerCase() !== lower && isWithin(r, path))
  }

  /**
   * The folders the caller's permissions start at, cut down to the key's folder ('' for a site
   * admin without a folder restriction).
   */
  roots(): string[] {
    const key = this.keyPath
    if (this.grants === null) return [key ?? '']
    const out: string[] = []
    for (const g of this.grants) {
      if (key === null || isWithin(g.path, key)) out.push(g.path)
      else if (isWithin(key, g.path)) out.push(key)
    }
    return out
  }

  /** Files.com's `permissions` field: `r` read, `w` write, `d` delete, `l` list. */
  permissionString(path: string): string {
    return (
      (this.can(path, 'read') ? 'r' : '') +
      (this.can(path, 'write') ? 'w' : '') +
      (this.can(path, 'delete') ? 'd' : '') +
      (this.can(path, 'list') ? 'l' : '')
    )
  }
}

export class FileAccess {
  constructor(private readonly permissions: PermissionRepository) {}

  async of(p: Principal): Promise<AccessView> {
    return this.ofUser(p.siteId, p.user, p.apiKey?.path ? p.apiKey.path : null)
  }

  /**
   * A user's access (null: a site-wide key), within an API key's folder if `keyPath`: what a
   * signed link recorded of its caller, read again when it is used.
   */
  async ofUser(siteId: number, user: UserRow | null, keyPath: string | null): Promise<AccessView> {
    if (user === null || user.site_admin === 1) return new AccessView(null, keyPath)
    if (isReadOnlyAdmin(user)) return new AccessView(null, keyPath, true)
    const rows = await this.permissions.grantsOf(siteId, user.id)
    return new AccessView(
      rows.map((r) => ({ path: r.path, caps: GRANTS[r.permission] ?? [] })),
      keyPath,
    )
  }
}
