import crypto from 'node:crypto'
import { ERRORS } from '../api/error-factories.js'
import type { Principal } from '../modules/auth/principal.js'
import type { ProtocolLogin, ProtocolSession } from '../modules/auth/protocol-login.js'

interface Verified {
  session: ProtocolSession
  until: number
}

/**
 * HTTP Basic for WebDAV. A WebDAV client sends its password with every request (a folder
 * listing in Windows is dozens of them), so a successful login (ProtocolLogin: the throttle,
 * lockout and `login` Action of POST /sessions) is remembered for `ttlMs`, keyed by an HMAC of the
 * name and password under a secret of this process: the password itself is never kept, and an
 * entry is found only by sending the very same credentials. A remembered login is still read
 * again on every request (`refresh`: an ended session, a disabled user, an expired key is refused
 * at once). Failures are never remembered: each one goes through the login rules, so lockout and
 * the per-IP throttle stay whole.
 */
export class DavAuthenticator {
  private readonly verified = new Map<string, Verified>()
  private readonly pending = new Map<string, Promise<ProtocolSession>>()
  private readonly secret = crypto.randomBytes(32)

  constructor(
    private readonly login: ProtocolLogin,
    private readonly siteId: number,
    private readonly ttlMs: number,
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
    if (hit && hit.until > this.now()) {
      try {
        return { ...(await hit.session.refresh()), ip }
      } catch {
        // Ended, expired or disabled since: the credentials are checked again below.
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
          if (this.ttlMs > 0) this.remember(id, session)
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
    this.verified.set(id, { session, until: this.now() + this.ttlMs })
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
  const username = decoded.slice(0, colon)
  const password = decoded.slice(colon + 1)
  if (username.length > 128 || password.length > 1024 || password === '') return null
  return { username, password }
}
