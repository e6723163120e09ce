import { ERRORS } from '../api/error-factories.js'
import { ApiError } from '../api/errors.js'
import type { Principal } from '../identity/principal.js'
import type { ProtocolLogin } from '../modules/auth/protocol-login.js'
import { RememberedLogins } from '../modules/auth/remembered-logins.js'

/**
 * HTTP Basic for WebDAV: the credentials of every request, logged in or found among the logins
 * remembered while the client keeps using them (RememberedLogins, interface `dav`).
 */
export class DavAuthenticator {
  private readonly logins: RememberedLogins

  constructor(login: ProtocolLogin, siteId: number, idleMs: number, now: () => number) {
    this.logins = new RememberedLogins(login, siteId, 'dav', idleMs, now)
  }

  /** The principal of a request's `Authorization: Basic …`, or 401. */
  async principal(authorization: string | undefined, ip: string): Promise<Principal> {
    const creds = basicCredentials(authorization)
    if (!creds)
      throw ERRORS.authenticationRequired(
        'Authentication required: send a user name and password (HTTP Basic)',
      )
    return this.logins.principal(creds, ip).catch((err) => {
      // One password per request leaves no room for a code: such users send an API key instead,
      // and the client is asked for other credentials (401), as for a wrong password.
      if (err instanceof ApiError && err.type === 'not-authorized/two-factor-authentication-required') {
        throw ERRORS.authenticationRequired(
          'This user signs in with two-factor authentication: use an API key of the user as the WebDAV password',
        )
      }
      throw err
    })
  }

  /** Ends the sessions this process holds (the server is stopping). */
  close(): Promise<void> {
    return this.logins.close()
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
