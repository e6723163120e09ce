import type { Kysely } from 'kysely'
import { ERRORS } from '../../api/error-factories.js'
import type { Database } from '../../db/schema.js'
import { type Interface, isReadOnlyAdmin, type Principal } from '../../identity/principal.js'
import { randomHex, tokenHash, verifyPassword } from '../../security/secrets.js'
import type { AccessService } from '../access/access-service.js'
import { type ActionContext, recordAction } from '../actions/action-recorder.js'
import { failedLoginTimes } from '../actions/action-repository.js'
import type { LoginDefender } from '../login-defender/login-defender.js'
import type { PasswordPolicy } from '../passwords/password-policy.js'
import type { ModuleSettings } from '../settings.js'
import { CODE_REQUIRED, type TwoFactorService } from '../two-factor/two-factor-service.js'
import type { UserRepository } from '../users/user-repository.js'
import type { SessionRepository } from './session-repository.js'

const REAUTH_WINDOW_MS = 60 * 60 * 1000
const REAUTH_MAX_PER_WINDOW = 10
const REAUTH_MAX_FAILURES = 3

export interface LoginInput {
  username: string
  password: string
  ip: string
  interface: Interface
  /**
   * The front end has just asked the login defender about this address (an SFTP connection
   * does so once, before its first try), so the login does not read the ban again.
   */
  addressChecked?: boolean
  /** The code of the user's authenticator (or a recovery code), for a user with two-factor sign-in. */
  otp?: string | undefined
  /** The password may end with `:<code>` (FTP: no field of its own for the code). */
  otpInPassword?: boolean
}

/**
 * The failedlogin Action's failure_type of a wrong one-time code: the spec has none of its own,
 * and the code is part of the credentials, so it locks the user out and bans the address exactly
 * as wrong passwords do (docs/decisions.md, "Two-factor sign-in").
 */
export const OTP_FAILURE_TYPE = 'password_mismatch'

export class SessionService {
  private readonly windowMs: number

  constructor(
    private readonly sessions: SessionRepository,
    private readonly users: UserRepository,
    private readonly config: ModuleSettings,
    private readonly defender: LoginDefender,
    private readonly now: () => number = Date.now,
    /** Who must change their password first: refused on the transfer protocols. */
    private readonly passwords?: PasswordPolicy,
    /** Rights, address limits and the end of access (none: every good password logs in). */
    private readonly access?: AccessService,
    private readonly twoFactor?: TwoFactorService,
  ) {
    this.windowMs = config.login.windowMinutes * 60_000
  }

  /**
   * POST /sessions: refuses a banned address (the login defender), then checks the lockout and
   * the password; every failure is a `failedlogin` Action and a failure of the address.
   */
  async login(siteId: number, input: LoginInput): Promise<{ id: string; read_only: boolean }> {
    const now = this.now()
    const ctx: ActionContext = {
      siteId,
      userId: null,
      username: input.username,
      ip: input.ip,
      interface: input.interface,
    }
    if (!input.addressChecked) await this.defender.check(siteId, input.ip)

    const user = await this.users.findByUsername(siteId, input.username)
    // An unknown name is answered exactly like a real one: the same refusal, the same lock after
    // the same number of failures, and the same password hash spent, so neither the answers nor
    // their timing tell which names exist. Its failures are kept under the name in lower case,
    // the way a real user's are kept under the one name whatever case is typed.
    const userCtx = user
      ? { ...ctx, userId: user.id, username: user.username }
      : { ...ctx, username: input.username.toLowerCase() }
    const failureType = user ? 'password_mismatch' : 'username_not_found'
    const since = Math.max(now - 2 * this.windowMs, user?.last_login_at ?? 0)
    const lockedUntil = await this.lockedUntil(siteId, userCtx.username, failureType, since)
    if (lockedUntil > now) {
      // The history tells site admins the truth: a name that does not exist stays `username_not_found`.
      await this.failed(userCtx, user ? 'locked_out' : failureType, now)
      throw ERRORS.lockedOut('Too many failed logins: this user is locked out for a while', {
        retryAfter: Math.ceil((lockedUntil - now) / 1000),
      })
    }
    const { password, otp } =
      user && input.otpInPassword && this.twoFactor
        ? await this.twoFactor.splitPassword(user, input.password)
        : input
    const ok = await verifyPassword(password, user?.password_hash ?? null)
    if (!user || !ok) {
      await this.failed(userCtx, failureType, now)
      throw badLogin()
    }
    if (user.disabled) {
      await this.failed(userCtx, 'disabled', now)
      throw badLogin()
    }
    await this.access?.enforce(() => userCtx, user, input.ip, input.interface, badLogin)
    // A transfer protocol cannot ask for a new password: such a login fails like a wrong password
    // (the web and REST sign in, to a session that can only change it).
    if (PROTOCOLS.has(input.interface)) {
      const why = await this.passwords?.loginRefusal(user)
      if (why) {
        await this.failed(
          userCtx,
          'expired_access',
          now,
          why === 'password_expired' ? 'password expired' : 'password change required',
        )
        throw badLogin()
      }
    }
    const second = this.twoFactor ? await this.twoFactor.loginStep(user, otp) : 'none'
    if (second === 'missing') {
      throw ERRORS.twoFactorAuthenticationRequired(CODE_REQUIRED)
    }
    if (second === 'incorrect') {
      await this.failed(userCtx, OTP_FAILURE_TYPE, now, 'one-time password incorrect')
      throw ERRORS.oneTimePasswordIncorrect('The one-time password is incorrect or was already used')
    }
    const id = randomHex(32)
    await this.sessions.transaction(async (tx) => {
      await tx.insert({
        id_hash: tokenHash(id),
        site_id: siteId,
        user_id: user.id,
        created_at: now,
        last_active_at: now,
        ip: input.ip,
        interface: input.interface,
        reauth_failures: 0,
        reauth_window_start: now,
        reauth_window_count: 0,
        two_factor_setup: second === 'setup' ? 1 : 0,
      })
      await this.users.on(tx.db).touchLogin(user.id, now)
      // Sessions nobody came back to would otherwise stay forever: each login clears the site's.
      await tx.deleteIdle(siteId, now - this.config.sessionIdleMinutes * 60_000)
      await recordAction(tx.db, userCtx, { action: 'login', display: `${user.username} logged in` }, now)
    })
    return { id, read_only: isReadOnlyAdmin(user) }
  }

  /** DELETE /sessions: ends the session if there is one; the answer never tells. */
  async logout(sessionId: string | undefined): Promise<void> {
    if (!sessionId || sessionId.length > 200) return
    await this.sessions.delete(tokenHash(sessionId))
  }

  /**
   * Ends every session of a user (after a password change by someone else, or deletion), in the
   * caller's transaction `db` when given.
   */
  async endAllFor(userId: number, db: Kysely<Database> = this.sessions.db): Promise<void> {
    await this.sessions.on(db).deleteForUser(userId)
  }

  /** Ends the user's other sessions, those on other devices, keeping the one making a change. */
  async endOthers(userId: number, keepHash: string, db: Kysely<Database> = this.sessions.db): Promise<void> {
    await this.sessions.on(db).deleteOthers(userId, keepHash)
  }

  /**
   * Reauthentication for sensitive changes made through a session (password change, user
   * deletion). API-key callers pass without it. `header` is the X-Service-Reauthentication value.
   */
  async reauthenticate(p: Principal, header: string | undefined): Promise<void> {
    if (!p.sessionHash || !p.user) return
    if (header === undefined || header === '') {
      throw ERRORS.reauthenticationNeededAction(
        'This action needs your password again: send X-Service-Reauthentication: password:<your password>',
      )
    }
    if (!header.startsWith('password:')) {
      throw ERRORS.reauthenticationNeededFields(
        'X-Service-Reauthentication must be "password:<your password>"',
      )
    }
    const now = this.now()
    const hash = p.sessionHash
    // Reserve the try in one statement before checking the password: concurrent tries then cannot
    // all read the same counters and slip past the hourly limit or the three-strikes rule.
    const expired = now - REAUTH_WINDOW_MS
    if (!(await this.sessions.reserveReauth(hash, now, expired, REAUTH_MAX_PER_WINDOW))) {
      const windowStart = await this.sessions.reauthWindowStart(hash)
      if (windowStart === undefined) throw ERRORS.authenticationRequired('The session has ended')
      throw ERRORS.reauthenticationRateLimited('Too many reauthentication attempts; try again later', {
        retryAfter: Math.max(1, Math.ceil((windowStart + REAUTH_WINDOW_MS - now) / 1000)),
      })
    }
    const ok = await verifyPassword(header.slice('password:'.length), p.user.password_hash)
    if (ok) {
      await this.sessions.clearReauthFailures(hash)
      return
    }
    const failures = await this.sessions.countReauthFailure(hash)
    if (failures === undefined || failures >= REAUTH_MAX_FAILURES) {
      await this.sessions.delete(hash)
      throw ERRORS.reauthenticationFailedFinal('Reauthentication failed three times: the session has ended')
    }
    throw ERRORS.reauthenticationFailed('Reauthentication failed: the password is wrong')
  }

  private async failed(ctx: ActionContext, failureType: string, now: number, why?: string): Promise<void> {
    if (ctx.ip) await this.defender.recordFailure(ctx.siteId, ctx.ip, failureType)
    await recordAction(
      this.sessions.db,
      ctx,
      {
        action: 'failedlogin',
        display: `Failed login for ${ctx.username ?? ''} (${failureType}${why ? `: ${why}` : ''})`,
        failureType,
      },
      now,
    )
  }

  /**
   * When a user name's lock ends (0 if not locked): 5 failures of `failureType` within 15 minutes,
   * since `since`, lock the name for 15 minutes from the fifth; attempts while locked do not count.
   */
  private async lockedUntil(siteId: number, username: string, failureType: string, since: number) {
    const times = await failedLoginTimes(this.sessions.db, siteId, username, failureType, since)
    let until = 0
    let recent: number[] = []
    for (const t of times) {
      if (t < until) continue
      recent = recent.filter((x) => x > t - this.windowMs)
      recent.push(t)
      if (recent.length >= this.config.login.maxFailuresPerUser) {
        until = t + this.windowMs
        recent = []
      }
    }
    return until
  }
}

const PROTOCOLS = new Set<Interface>(['sftp', 'ftp', 'dav'])

const badLogin = () => ERRORS.invalidUsernameOrPassword('Invalid username or password')
