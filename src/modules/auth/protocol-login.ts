import { ERRORS } from '../../api/error-factories.js'
import { ApiError } from '../../api/errors.js'
import type { Principal, ProtocolInterface, UserRow } from '../../identity/principal.js'
import type { AccessService } from '../access/access-service.js'
import { contextOf, recordAction } from '../actions/action-recorder.js'
import type { LoginDefender } from '../login-defender/login-defender.js'
import type { SessionService } from '../sessions/session-service.js'
import type { UserRepository } from '../users/user-repository.js'
import { type AuthService, accessRefusedUser } from './auth-service.js'

/** A protocol connection's login: who it is, kept fresh, and ended with the connection. */
export interface ProtocolSession {
  readonly principal: Principal
  /**
   * The principal read again (a disabled user, an expired key or an ended session is refused
   * with 401 from here on). Front ends call it now and then, not on every command.
   */
  refresh(): Promise<Principal>
  /** The connection has closed. */
  end(): Promise<void>
}

const API_KEY = /^[0-9a-f]{64}$/i
const badLogin = () => ERRORS.invalidUsernameOrPassword('Invalid username or password')

/**
 * Password logins for the transfer protocols, with exactly the rules of `POST /sessions`: the
 * same login defender (failures per address), the same lockout, a `login` or `failedlogin` Action with the protocol's
 * interface. The connection holds a Wharf session for as long as it lasts.
 *
 * An API key also works as the password, with the name of its user (as Files.com allows for
 * FTP, SFTP and WebDAV): scripts then need no password, and the key's folder restriction and
 * permission set apply. A key that is not the user's falls through to the password check, so
 * it counts as a failed login.
 */
export class ProtocolLogin {
  constructor(
    private readonly users: UserRepository,
    private readonly auth: AuthService,
    private readonly sessions: SessionService,
    private readonly defender: LoginDefender,
    private readonly now: () => number = Date.now,
    /** Rights, address limits and the end of access (none: every good credential logs in). */
    private readonly access?: AccessService,
  ) {}

  async password(
    siteId: number,
    input: {
      username: string
      password: string
      ip: string
      interface: ProtocolInterface
      /** The front end has just checked the address with the login defender. */
      addressChecked?: boolean
      /** The code of a user with two-factor sign-in (SFTP asks for it by keyboard-interactive). */
      otp?: string
    },
  ): Promise<ProtocolSession> {
    const { ip, interface: iface } = input
    // A banned address is refused whatever it sends, a key of the right user included.
    if (!input.addressChecked) await this.defender.check(siteId, ip)
    if (API_KEY.test(input.password)) {
      const byKey = await this.auth.authenticate({ apiKey: input.password }, ip, iface).catch((err) => {
        // The user's own key, refused by their access (and recorded so): a failed login, no more.
        if (accessRefusedUser(err) === input.username.toLowerCase()) throw badLogin()
        return null
      })
      if (byKey?.user && byKey.user.username_lower === input.username.toLowerCase()) {
        await this.recordLogin(byKey, 'with an API key')
        return {
          principal: byKey,
          refresh: () => this.auth.authenticate({ apiKey: input.password }, ip, iface),
          end: async () => undefined,
        }
      }
    }
    const { id } = await this.sessions.login(siteId, {
      username: input.username,
      password: input.password,
      ip,
      interface: iface,
      addressChecked: true,
      otp: input.otp,
      // FTP has no field for a code: a user with two-factor sign-in sends `password:123456`.
      otpInPassword: iface === 'ftp',
    })
    const principal = await this.auth.authenticate({ sessionId: id }, ip, iface)
    if (principal.twoFactorSetup) {
      // Enrolling needs the web interface or the API: the transfer protocols wait until then.
      await this.sessions.logout(id)
      throw ERRORS.twoFactorAuthenticationRequired('Set up two-factor sign-in in the web interface first')
    }
    return {
      principal,
      refresh: () => this.auth.authenticate({ sessionId: id }, ip, iface),
      end: () => this.sessions.logout(id),
    }
  }

  /**
   * A user the front end has authenticated itself (an SSH public key of theirs): a principal
   * with the user's own permissions, and a `login` Action. A disabled user is refused.
   */
  async trusted(user: UserRow, ip: string, iface: ProtocolInterface, how: string): Promise<ProtocolSession> {
    if (user.disabled) throw ERRORS.authenticationRequired('The user is disabled')
    const ctx = { siteId: user.site_id, userId: user.id, username: user.username, ip, interface: iface }
    await this.access?.enforce(() => ctx, user, ip, iface, badLogin)
    const principal: Principal = {
      siteId: user.site_id,
      user,
      apiKey: null,
      sessionHash: null,
      permissionSet: 'full',
      ip,
      interface: iface,
    }
    await this.recordLogin(principal, how)
    const refresh = async () => {
      const fresh = await this.users.findById(user.id)
      if (!fresh || fresh.disabled) throw ERRORS.authenticationRequired('The user is disabled or deleted')
      if (this.access && (await this.access.failure(fresh, ip, iface)) !== null) {
        throw ERRORS.authenticationRequired('The user may no longer log in this way')
      }
      return { ...principal, user: fresh }
    }
    return { principal, refresh, end: async () => undefined }
  }

  private async recordLogin(p: Principal, how: string): Promise<void> {
    const name = p.user?.username ?? ''
    await this.users.transaction((tx) =>
      recordAction(tx.db, contextOf(p), { action: 'login', display: `${name} logged in ${how}` }, this.now()),
    )
  }
}

/** Refusals a login answers with "wrong credentials" (or a lock): the rest are server faults. */
export function isLoginRefusal(err: unknown): err is ApiError {
  return err instanceof ApiError && (err.status === 401 || err.status === 429 || err.status === 403)
}
