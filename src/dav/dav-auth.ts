import crypto from 'node:crypto'
import { ERRORS } from '../api/error-factories.js'
import type { Principal } from '../modules/auth/principal.js'
import type { ProtocolLogin, ProtocolSession } from '../modules/auth/protocol-login.js'

interface Verified {
  session: ProtocolSession
  createdAt: number
  usedAt: number
  /** The user's password as it was when checked: a change (even by the user) ends the reuse. */
  passwordSetAt: number | null
}

/** However busy the client, its password is checked again after this long. */
export const MAX_REUSE_MS = 3600_000

/**
 * HTTP Basic for WebDAV. A WebDAV client sends its password with every request (a folder
 * listing in Windows is dozens of them), so a successful login (ProtocolLogin: the throttle,
 * lockout and `login` Action of POST /sessions) is remembered while the client keeps using it
 * (no pause longer than `idleMs`, and at most MAX_REUSE_MS in all), keyed by an HMAC of the name
 * and password under a secret of this process: the password itself is never kept, and an entry
 * is found only by sending the very same credentials. Remembering must be long enough that busy
 * clients do not spend the per-IP login budget (which counts successful logins too). A
 * remembered login is still read again on every request (`refresh`: an ended session, a disabled
 * user, an expired key, a changed password is refused or checked again at once). Failures are
 * never remembered: each one goes through the login rules, so lockout and the per-IP throttle
 * stay whole.
 */
export class DavAuthenticator {
  private readonly verified = new Map<string, Verified>()
  private readonly pending = new Map<string, Promise<ProtocolSession>>()
  private readonly secret = crypto.randomBytes(32)

  constructor(
    private readonly login: ProtocolLogin,
    private readonly siteId: number,
    private readonly idleMs: number,
    private readonly now: () => number,
    private readonly max = 10_000,
  ) {}

  /** The principal of a request's `Authorization: Basic …`, or 401. */
  async principal(authorization: string | undefined, ip: string): Promise<Principal> {
    const creds = basicCredentials(authorization)
    if (!creds)
      throw ERRORS.authenticationRequired(
        'Authentication required: send a user name and password (HTTP Basic)',
      )
    const id = crypto
      .createHmac('sha256', this.secret)
      .update(`${creds.username}\0${creds.password}`)
      .digest('hex')
    const hit = this.verified.get(id)
    const now = this.now()
    if (hit && now - hit.usedAt < this.idleMs && now - hit.createdAt < MAX_REUSE_MS) {
      const fresh = await hit.session.refresh().catch(() => null)
      // Null: ended, expired or disabled since; either way the credentials are checked again below.
      if (fresh && (fresh.user?.password_set_at ?? null) === hit.passwordSetAt) {
        hit.usedAt = now
        return { ...fresh, ip }
      }
    }
    if (hit) this.forget(id, hit)
    const session = await this.verify(id, creds, ip)
    return { ...session.principal, ip }
  }

  /** Ends the sessions this process holds (the server is stopping). */
  async close(): Promise<void> {
    const all = [...this.verified.values()]
    this.verified.clear()
    await Promise.all(all.map((v) => v.session.end().catch(() => undefined)))
  }

  private verify(id: string, creds: { username: string; password: string }, ip: string) {
    // Parallel requests with new credentials (a client opening several connections) share one login.
    let p = this.pending.get(id)
    if (!p) {
      p = this.login
        .password(this.siteId, { ...creds, ip, interface: 'dav' })
        .then((session) => {
          if (this.idleMs > 0) this.remember(id, session)
          else void session.end().catch(() => undefined)
          return session
        })
        .finally(() => this.pending.delete(id))
      this.pending.set(id, p)
    }
    return p
  }

  private remember(id: string, session: ProtocolSession): void {
    if (this.verified.size >= this.max) {
      const [oldId, old] = this.verified.entries().next().value!
      this.forget(oldId, old)
    }
    const now = this.now()
    this.verified.set(id, {
      session,
      createdAt: now,
      usedAt: now,
      passwordSetAt: session.principal.user?.password_set_at ?? null,
    })
  }

  private forget(id: string, v: Verified): void {
    if (this.verified.get(id) === v) this.verified.delete(id)
    void v.session.end().catch(() => undefined)
  }
}

/** `Basic base64(name:password)`; the password may hold colons, the name may not. */
export function basicCredentials(header: string | undefined): { username: string; password: string } | null {
  if (!header || !/^basic\s+/i.test(header)) return null
  const decoded = Buffer.from(header.replace(/^basic\s+/i, '').trim(), 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon <= 0) return null
  // Windows may send `DOMAIN\name`; a backslash is never part of a Wharf user name.
  const username = decoded.slice(decoded.lastIndexOf('\\', colon) + 1, colon)
  const password = decoded.slice(colon + 1)
  if (username === '' || username.length > 128 || password.length > 1024 || password === '') return null
  return { username, password }
}
