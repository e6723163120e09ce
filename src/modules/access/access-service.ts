import { ERRORS } from '../../api/error-factories.js'
import { ApiError, addModelError, type ModelErrors } from '../../api/errors.js'
import type { IdentityCache } from '../../identity/identity-cache.js'
import { type Interface, type Principal, requireSiteAdmin, type UserRow } from '../../identity/principal.js'
import { type ActionContext, recordAction } from '../actions/action-recorder.js'
import type { LoginDefender } from '../login-defender/login-defender.js'
import type { AccessLimits, AccessRepository } from './access-repository.js'
import { checkAllowedIps, ipAllowed } from './allowed-ips.js'

/** The Site resource (the fields Wharf has of the Files.com model). */
export interface SiteJson {
  name: string
  allowed_ips: string | null
}

/** Why a login with good credentials was refused: a `failedlogin` Action's failure_type. */
export type AccessFailure =
  | 'expired_access'
  | 'no_ftp_permission'
  | 'no_sftp_permission'
  | 'no_dav_permission'
  | 'no_restapi_permission'
  | 'no_web_permission'
  | 'ip_mismatch'

type Right = 'ftp_permission' | 'sftp_permission' | 'dav_permission' | 'restapi_permission'

/** The right each way in needs, and the failure its absence records (the operator's CLI needs none). */
const RIGHTS: Partial<Record<Interface, [Right, AccessFailure]>> = {
  ftp: ['ftp_permission', 'no_ftp_permission'],
  sftp: ['sftp_permission', 'no_sftp_permission'],
  dav: ['dav_permission', 'no_dav_permission'],
  restapi: ['restapi_permission', 'no_restapi_permission'],
  // The web interface is a client of the API: the same right, its own failure in the history.
  web: ['restapi_permission', 'no_web_permission'],
}

/**
 * Whether a user may log in from `ip` through `iface` (null) or why not, in this order: access
 * that has ended (`authenticate_until`), then the protocol right (the user's own and every one of
 * their groups' must allow it), then the address (inside every non-empty `allowed_ips` among the
 * site's, the user's and their groups').
 */
export function accessFailure(
  user: UserRow,
  limits: AccessLimits,
  ip: string,
  iface: Interface,
  now: number,
): AccessFailure | null {
  if (user.authenticate_until !== null && user.authenticate_until <= now) return 'expired_access'
  const right = RIGHTS[iface]
  if (right) {
    const [column, failure] = right
    if (user[column] !== 1 || limits.groups.some((g) => g[column] !== 1)) return failure
  }
  if (!ipAllowed(limits.siteAllowedIps, ip) || !ipAllowed(user.allowed_ips, ip)) return 'ip_mismatch'
  for (const g of limits.groups) if (!ipAllowed(g.allowed_ips, ip)) return 'ip_mismatch'
  return null
}

interface Cached {
  limits: AccessLimits
  at: number
}

/**
 * Per-user protocol rights, address limits and the end of access, applied at every login (POST
 * /sessions and the web sign-in, each request of an API key, SFTP, FTP and WebDAV logins) and
 * again whenever a session or a connection's login is read again. A refused login is recorded as
 * a `failedlogin` Action with its failure type and scored by the login defender; the caller
 * answers it exactly as it answers a wrong password.
 *
 * The site's and the groups' limits of a user are kept for the identity cache's lifetime
 * (AUTH_CACHE_SECONDS), and forgotten whenever users, groups or the site change in this process.
 */
export class AccessService {
  private readonly cache = new Map<number, Cached>()

  constructor(
    private readonly repo: AccessRepository,
    private readonly defender: LoginDefender,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    identities?: IdentityCache,
    private readonly max = 10_000,
  ) {
    identities?.onClear(() => this.cache.clear())
  }

  /** Why this user may not log in now from `ip` through `iface`, or null. */
  async failure(user: UserRow, ip: string, iface: Interface): Promise<AccessFailure | null> {
    if (RIGHTS[iface] === undefined) return null
    return accessFailure(user, await this.limits(user), ip, iface, this.now())
  }

  /**
   * A login whose credentials were good: refused (the `failedlogin` Action, a failure of the
   * address, then `refusal()` thrown) when the user's access does not allow it. Undefined, with
   * nothing to wait for, when the user's limits are known and allow it: each request of an API
   * key is such a login, and most need no promise.
   */
  enforce(
    ctx: () => ActionContext,
    user: UserRow,
    ip: string,
    iface: Interface,
    refusal: () => ApiError,
  ): Promise<void> | undefined {
    if (RIGHTS[iface] === undefined) return undefined
    const limits = this.cachedLimits(user)
    if (limits !== undefined && accessFailure(user, limits, ip, iface, this.now()) === null) return undefined
    return this.enforceFully(ctx, user, ip, iface, refusal)
  }

  private async enforceFully(
    context: () => ActionContext,
    user: UserRow,
    ip: string,
    iface: Interface,
    refusal: () => ApiError,
  ): Promise<void> {
    const failure = await this.failure(user, ip, iface)
    if (failure === null) return
    const ctx = context()
    await this.recordRefusal(
      { ...ctx, userId: user.id, username: user.username, ip, interface: iface },
      failure,
    )
    throw refusal()
  }

  /** Records a refused login: the `failedlogin` Action with `failureType`, and the login defender's score. */
  async recordRefusal(ctx: ActionContext, failureType: string): Promise<void> {
    const now = this.now()
    if (ctx.ip) await this.defender.recordFailure(ctx.siteId, ctx.ip, failureType)
    await recordAction(
      this.repo.db,
      ctx,
      {
        action: 'failedlogin',
        display: `Failed login for ${ctx.username ?? ''} (${failureType})`,
        failureType,
      },
      now,
    )
  }

  /** GET /site (site admins). */
  async showSite(p: Principal, name: string): Promise<SiteJson> {
    requireSiteAdmin(p)
    return { name, allowed_ips: await this.repo.siteAllowedIps(p.siteId) }
  }

  /**
   * PATCH /site (site admins): the site-wide `allowed_ips`, which must hold the caller's own
   * address (a list that would shut its author out is refused, 422).
   */
  async updateSite(
    p: Principal,
    name: string,
    input: { allowed_ips?: string | null | undefined; name?: unknown },
  ) {
    const list = this.checkSite(p, name, input)
    if (list !== undefined) {
      await this.repo.setSiteAllowedIps(p.siteId, list)
      this.cache.clear()
    }
    return this.showSite(p, name)
  }

  /**
   * Refuses what `updateSite` would refuse, changing nothing: PATCH /site checks every field
   * before it saves any. The list to store; undefined when the input does not set it.
   */
  checkSite(p: Principal, name: string, input: { allowed_ips?: string | null | undefined; name?: unknown }) {
    requireSiteAdmin(p)
    if (input.name !== undefined && input.name !== name) {
      throw ERRORS.requestParamsInvalid('name is read-only: it is set by SITE_NAME')
    }
    if (input.allowed_ips === undefined) return undefined
    const errors: ModelErrors = {}
    const list = checkAllowedIps(input.allowed_ips, 'allowed_ips', errors)
    if (!Object.keys(errors).length && p.interface !== 'robot' && !ipAllowed(list, p.ip)) {
      addModelError(errors, 'allowed_ips', `must include your own address (${p.ip})`)
    }
    if (Object.keys(errors).length) throw ApiError.modelSave(errors)
    return list
  }

  /** Forgets what was read (a group, a user or the site changed). */
  clear(): void {
    this.cache.clear()
  }

  private cachedLimits(user: UserRow): AccessLimits | undefined {
    const now = this.now()
    const hit = this.cache.get(user.id)
    return hit && now - hit.at < this.ttlMs && now >= hit.at ? hit.limits : undefined
  }

  private async limits(user: UserRow): Promise<AccessLimits> {
    const hit = this.cachedLimits(user)
    if (hit !== undefined) return hit
    const now = this.now()
    const limits = await this.repo.limits(user.site_id, user.id)
    if (this.ttlMs > 0) {
      if (this.cache.size >= this.max) this.cache.delete(this.cache.keys().next().value!)
      this.cache.set(user.id, { limits, at: now })
    }
    return limits
  }
}
