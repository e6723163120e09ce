import crypto from 'node:crypto'
import type { Principal, ProtocolInterface } from '../../identity/principal.js'
import { CheckedLogin } from './checked-login.js'
import type { ProtocolLogin } from './protocol-login.js'

interface Remembered {
  login: CheckedLogin<Principal>
  createdAt: number
  usedAt: number
  /** The user's password as it was when checked: a change (even by the user) ends the reuse. */
  passwordSetAt: number | null
}

/** However busy the client, its password is checked again after this long. */
export const MAX_REUSE_MS = 3600_000

/**
 * Password logins of a protocol without connections (WebDAV: HTTP sends the name and password
 * with every request, and a folder listing in Windows is dozens of them). A successful login
 * (ProtocolLogin: the login defender, lockout and `login` Action of POST /sessions) is remembered
 * while the client keeps using it (no pause longer than `idleMs`, and at most MAX_REUSE_MS in
 * all), keyed by an HMAC of the name and password under a secret of this process: the password
 * itself is never kept, and an entry is found only by sending the very same credentials.
 * Remembering spares a busy client a password hash and a `login` Action per request; successful
 * logins never count against its address (the login defender scores failures only). A remembered
 * login is a CheckedLogin read again on every use (there is no connection to cut later, and any
 * request may be the first after a change): an ended session, a disabled user, an expired key, a
 * changed password is refused or checked again at once. Failures are never remembered: each one
 * goes through the login rules, so lockout and the login defender count every one.
 */
export class RememberedLogins {
  private readonly remembered = new Map<string, Remembered>()
  private readonly pending = new Map<string, Promise<CheckedLogin<Principal>>>()
  private readonly secret = crypto.randomBytes(32)

  constructor(
    private readonly protocolLogin: ProtocolLogin,
    private readonly siteId: number,
    private readonly iface: ProtocolInterface,
    private readonly idleMs: number,
    private readonly now: () => number,
    private readonly max = 10_000,
  ) {}

  /** The principal of these credentials, remembered or checked now; rejects as a login does. */
  async principal(creds: { username: string; password: string }, ip: string): Promise<Principal> {
    const id = crypto
      .createHmac('sha256', this.secret)
      .update(`${creds.username}\0${creds.password}`)
      .digest('hex')
    const hit = this.remembered.get(id)
    const now = this.now()
    if (hit && now - hit.usedAt < this.idleMs && now - hit.createdAt < MAX_REUSE_MS) {
      const fresh = await hit.login.current().catch(() => null)
      // Null: ended, expired or disabled since; either way the credentials are checked again below.
      if (fresh && (fresh.user?.password_set_at ?? null) === hit.passwordSetAt) {
        hit.usedAt = now
        return { ...fresh, ip }
      }
    }
    if (hit) this.forget(id, hit)
    const login = await this.verify(id, creds, ip)
    return { ...login.session.principal, ip }
  }

  /** Ends the sessions this process holds (the server is stopping). */
  async close(): Promise<void> {
    const all = [...this.remembered.values()]
    this.remembered.clear()
    await Promise.all(all.map((r) => r.login.session.end().catch(() => undefined)))
  }

  private verify(id: string, creds: { username: string; password: string }, ip: string) {
    // Parallel requests with new credentials (a client opening several connections) share one login.
    let p = this.pending.get(id)
    if (!p) {
      p = this.protocolLogin
        .password(this.siteId, { ...creds, ip, interface: this.iface })
        .then((session) => {
          const login = new CheckedLogin(session, (principal) => principal, this.now, 0)
          if (this.idleMs > 0) this.remember(id, login)
          else void session.end().catch(() => undefined)
          return login
        })
        .finally(() => this.pending.delete(id))
      this.pending.set(id, p)
    }
    return p
  }

  private remember(id: string, login: CheckedLogin<Principal>): void {
    if (this.remembered.size >= this.max) {
      const [oldId, old] = this.remembered.entries().next().value!
      this.forget(oldId, old)
    }
    const now = this.now()
    this.remembered.set(id, {
      login,
      createdAt: now,
      usedAt: now,
      passwordSetAt: login.session.principal.user?.password_set_at ?? null,
    })
  }

  private forget(id: string, r: Remembered): void {
    if (this.remembered.get(id) === r) this.remembered.delete(id)
    void r.login.session.end().catch(() => undefined)
  }
}
