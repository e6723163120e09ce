import { ERRORS } from '../../api/error-factories.js'
import { ApiError } from '../../api/errors.js'
import { IdentityCache } from '../../identity/identity-cache.js'
import type { Interface, PermissionSet, Principal } from '../../identity/principal.js'
import { tokenHash } from '../../security/secrets.js'
import type { AccessService } from '../access/access-service.js'
import type { ApiKeyRepository } from '../api-keys/api-key-repository.js'
import type { SessionRepository } from '../sessions/session-repository.js'
import type { ModuleSettings } from '../settings.js'
import type { UserRepository } from '../users/user-repository.js'

/** last_use_at is written at most once per 3 hours per key (api-spec.md, ApiKey). */
export const LAST_USE_GRANULARITY_MS = 3 * 60 * 60 * 1000
/** A session's idle clock is written at most once a minute, not on every request. */
const SESSION_TOUCH_MS = 60 * 1000

export interface Credentials {
  apiKey?: string | undefined
  sessionId?: string | undefined
}

export function hasCredentials(c: Credentials): boolean {
  return c.apiKey !== undefined || c.sessionId !== undefined
}

const unauthenticated = (why: string) => ERRORS.authenticationRequired(why)

const REFUSED_USER = Symbol('refusedUser')

/** Marks an API key's refusal by its user's access (a right, an address, the end of access). */
function refusedFor(err: ApiError, usernameLower: string): ApiError {
  Object.defineProperty(err, REFUSED_USER, { value: usernameLower })
  return err
}

/** The user (name in lower case) whose access refused an API key, when that is why `err` was thrown. */
export function accessRefusedUser(err: unknown): string | undefined {
  return err instanceof ApiError
    ? (err as unknown as Record<symbol, string | undefined>)[REFUSED_USER]
    : undefined
}

export class AuthService {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly users: UserRepository,
    private readonly sessions: SessionRepository,
    private readonly config: ModuleSettings,
    private readonly now: () => number = Date.now,
    private readonly cache: IdentityCache = new IdentityCache(0),
    /** Rights, address limits and the end of access of the key's or session's user. */
    private readonly access?: AccessService,
  ) {}

  /** Resolves credentials to a principal, or rejects with 401 not-authenticated/authentication-required. */
  authenticate(c: Credentials, ip: string, iface: Interface): Promise<Principal> {
    if (c.apiKey !== undefined) return this.byApiKey(c.apiKey, ip, iface)
    if (c.sessionId !== undefined) return this.bySession(c.sessionId, ip, iface)
    return Promise.reject(
      unauthenticated(
        'Authentication required: send an API key (X-ServiceAPI-Key) or a session (X-ServiceAPI-Auth)',
      ),
    )
  }

  private async byApiKey(key: string, ip: string, iface: Interface): Promise<Principal> {
    if (!/^[0-9a-f]{64}$/i.test(key)) throw unauthenticated('The API key is not valid')
    const hash = tokenHash(key.toLowerCase())
    const now = this.now()
    let found = this.cache.get(hash, now)
    if (!found) {
      const row = await this.keys.findByHash(hash)
      if (!row) throw unauthenticated('The API key is not valid')
      const user = row.user_id === null ? null : ((await this.users.findById(row.user_id)) ?? null)
      if (row.user_id !== null && !user) throw unauthenticated('The API key belongs to a deleted user')
      this.cache.set(hash, row, user, now)
      found = { row, user, at: now }
    }
    const { row, user } = found
    if (row.expires_at !== null && row.expires_at <= now) throw unauthenticated('The API key has expired')
    if (user?.disabled) throw unauthenticated('The API key belongs to a disabled user')
    if (user && this.access) {
      // Each request of a key is a login of its user: refused as an unknown key is, and recorded.
      // Most requests find the user's limits known and allowing: nothing to wait for then.
      const refusing = this.access.enforce(
        () => ({ siteId: row.site_id, userId: user.id, username: user.username, ip, interface: iface }),
        user,
        ip,
        iface,
        () => refusedFor(unauthenticated('The API key is not valid'), user.username_lower),
      )
      if (refusing !== undefined) await refusing
    }
    if (row.last_use_at === null || now - row.last_use_at >= LAST_USE_GRANULARITY_MS) {
      // Guarded update: of concurrent requests only one writes, and a crash here loses nothing that matters.
      await this.keys.touchLastUse(row.id, now, now - LAST_USE_GRANULARITY_MS)
      // The cached row is shared: later requests see the write without reading it back.
      row.last_use_at = now
    }
    return {
      siteId: row.site_id,
      user,
      apiKey: row,
      sessionHash: null,
      permissionSet: row.permission_set as PermissionSet,
      ip,
      interface: iface,
    }
  }

  private async bySession(sessionId: string, ip: string, iface: Interface): Promise<Principal> {
    if (sessionId.length > 200) throw unauthenticated('The session is not valid')
    const hash = tokenHash(sessionId)
    const row = await this.sessions.findWithUser(hash)
    if (!row) throw unauthenticated('The session is not valid or has ended')
    const now = this.now()
    const { session_last_active_at: lastActive, session_interface, session_two_factor_setup, ...user } = row
    if (now - lastActive > this.config.sessionIdleMinutes * 60_000) {
      await this.sessions.delete(hash)
      throw unauthenticated('The session has expired')
    }
    if (user.disabled) throw unauthenticated('The user is disabled')
    const sessionIface = session_interface === 'web' ? 'web' : iface
    // A right taken away, an address left or access ended since the login: the session stops
    // working (the login was recorded; these requests are not logins).
    if (this.access && (await this.access.failure(user, ip, sessionIface)) !== null) {
      throw unauthenticated('The session is not valid or has ended')
    }
    if (now - lastActive >= SESSION_TOUCH_MS) {
      await this.sessions.touch(hash, now)
    }
    return {
      siteId: user.site_id,
      user,
      apiKey: null,
      sessionHash: hash,
      permissionSet: 'full',
      ip,
      interface: sessionIface,
      ...(session_two_factor_setup === 1 ? { twoFactorSetup: true } : {}),
    }
  }
}
