import { formatDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import { ApiError } from '../../api/errors.js'
import { isReadOnlyAdmin, isSiteAdmin, type Principal, type UserRow } from '../../identity/principal.js'
import { tokenHash } from '../../security/secrets.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import {
  decryptSecret,
  encryptSecret,
  isTotpCode,
  newRecoveryCode,
  newTotpSecret,
  normalizeRecoveryCode,
  otpauthUri,
  totpStep,
} from './totp.js'
import type { TwoFactorMethodRow, TwoFactorRepository } from './two-factor-repository.js'

/** The words of the refusal of a right password without the code the user also needs. */
export const CODE_REQUIRED = 'This user signs in with a code: send it as otp with the password'

/** The refusal of a login whose password was right and whose code is still to come. */
export function isCodeRequired(err: unknown): boolean {
  return (
    err instanceof ApiError &&
    err.type === 'not-authorized/two-factor-authentication-required' &&
    err.message === CODE_REQUIRED
  )
}

/** How long an enrolment waits for its first code before it must be started again. */
export const SETUP_MINUTES = 15
/** Recovery codes handed out at each confirmation (the previous set stops working). */
export const RECOVERY_CODES = 10

export const USER_REQUIRE_2FA = ['use_system_setting', 'always_require', 'never_require'] as const
export type UserRequire2fa = (typeof USER_REQUIRE_2FA)[number]
export const SITE_REQUIRE_2FA_USER_TYPES = ['all', 'site_admins'] as const

/** The TwoFactorAuthenticationMethod resource. */
export interface TwoFactorMethodJson {
  id: number
  user_id: number
  method_type: string
  name: string
  /** False until a code from the authenticator has been entered (PATCH with `otp`). */
  confirmed: boolean
  created_at: string
  /** When an unconfirmed method can no longer be confirmed; null once confirmed. */
  setup_expires_at: string | null
  /** Only in the answer to POST: the authenticator's secret as an `otpauth://` URI. */
  otpauth_uri?: string
  /** Only in the answer to the confirming PATCH: one-time codes usable once each instead of a code. */
  recovery_codes?: string[]
}

/**
 * What the second factor of a login decided:
 * - `none`: the user has no method and need not enrol: the password is enough;
 * - `verified`: a code of a method (or a recovery code) was right;
 * - `setup`: the user must enrol and has not: the session can only enrol;
 * - `missing`: the user has a method and sent no code;
 * - `incorrect`: the code sent is wrong or already used.
 */
export type SecondFactor = 'none' | 'verified' | 'setup' | 'missing' | 'incorrect'

/**
 * Two-factor sign-in with TOTP authenticators: enrolment (POST, then PATCH with a first code),
 * recovery codes, removal, the site's and users' requirement, and the second step of every
 * password login (`loginStep`). API keys and SSH keys are factors of their own and never asked.
 */
export class TwoFactorService {
  constructor(
    private readonly repo: TwoFactorRepository,
    private readonly secrets: SiteSecrets,
    private readonly issuer: () => string,
    private readonly now: () => number = Date.now,
  ) {}

  /** GET /two_factor_authentication_methods: the caller's own, or (site admins) a user's. */
  async list(p: Principal, userId?: number): Promise<TwoFactorMethodJson[]> {
    const target = this.targetUser(p, userId)
    return (await this.repo.forUser(target)).map((r) => toJson(r))
  }

  async get(p: Principal, id: number): Promise<TwoFactorMethodJson> {
    return toJson(await this.visible(p, id))
  }

  /** POST: a new, unconfirmed TOTP method; the answer carries its secret, this once. */
  async create(p: Principal, input: { method_type: string; name?: string | undefined }) {
    const user = ownUser(p)
    if (input.method_type !== 'totp') {
      throw ERRORS.requestParamsInvalid(
        'method_type must be "totp" (the only two-factor method Wharf offers)',
      )
    }
    const now = this.now()
    await this.repo.deleteExpiredSetups(user.id, now)
    const secret = newTotpSecret()
    const row = await this.repo.insert({
      site_id: p.siteId,
      user_id: user.id,
      method_type: 'totp',
      name: input.name?.trim() || 'Authenticator app',
      secret: encryptSecret(secret, await this.secrets.signingSecret(p.siteId)),
      confirmed_at: null,
      setup_expires_at: now + SETUP_MINUTES * 60_000,
      last_counter: null,
      created_at: now,
    })
    return { ...toJson(row), otpauth_uri: otpauthUri(secret, this.issuer(), user.username) }
  }

  /**
   * PATCH with `otp`: confirms an enrolment with a code of its authenticator, before its setup
   * time is over. The user then gets a new set of recovery codes (shown this once), and any
   * session that could only enrol becomes a full one.
   */
  async confirm(p: Principal, id: number, otp: string): Promise<TwoFactorMethodJson> {
    const user = ownUser(p)
    const row = await this.repo.find(p.siteId, id)
    if (!row || row.user_id !== user.id) throw notFound(id)
    if (row.confirmed_at !== null) {
      throw ERRORS.twoFactorAuthenticationError('This two-factor method is already confirmed')
    }
    const now = this.now()
    if (row.setup_expires_at <= now) {
      throw ERRORS.twoFactorAuthenticationSetupExpired(
        `The setup of this two-factor method expired after ${SETUP_MINUTES} minutes: start it again`,
      )
    }
    const step = totpStep(await this.secretOf(row), otp.trim(), now)
    if (step === null)
      throw ERRORS.oneTimePasswordIncorrect('The code is not the one the authenticator shows')
    const codes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode)
    const confirmed = await this.repo.transaction(async (tx) => {
      if (!(await tx.confirm(row.id, now, step))) return false
      await tx.replaceRecoveryCodes(
        p.siteId,
        user.id,
        codes.map((c) => tokenHash(normalizeRecoveryCode(c))),
        now,
      )
      await tx.endSetupSessions(user.id)
      return true
    })
    if (!confirmed) throw ERRORS.twoFactorAuthenticationError('This two-factor method is already confirmed')
    return { ...toJson({ ...row, confirmed_at: now }), recovery_codes: codes }
  }

  /**
   * DELETE: removes a method (the caller's own; site admins any user's, for someone who lost
   * their phone). The route has reauthenticated a session first. Without a confirmed method
   * left, the user's recovery codes go too.
   */
  async remove(p: Principal, id: number): Promise<void> {
    const row = await this.visible(p, id)
    await this.repo.transaction(async (tx) => {
      await tx.delete(row.id)
      if (!(await tx.hasConfirmed(row.user_id))) await tx.deleteRecoveryCodes(row.user_id)
    })
  }

  /**
   * Whether the user must sign in with a second factor: their own setting, else the site's. The
   * site's `site_admins` counts read-only site admins too: they read everything a site admin reads.
   */
  async required(user: UserRow): Promise<boolean> {
    if (user.require_2fa === 'always_require') return true
    if (user.require_2fa === 'never_require') return false
    const rule = await this.repo.siteRule(user.site_id)
    if (rule.require_2fa !== 1) return false
    return rule.require_2fa_user_type !== 'site_admins' || user.site_admin === 1 || isReadOnlyAdmin(user)
  }

  /**
   * A protocol's password that carries the code (FTP: `password:123456`): for a user with a
   * confirmed method, the text after the last colon is the code. Other users' passwords are
   * left whole, colons and all.
   */
  async splitPassword(user: UserRow, password: string): Promise<{ password: string; otp?: string }> {
    const at = password.lastIndexOf(':')
    if (at < 0 || !(await this.repo.hasConfirmed(user.id))) return { password }
    return { password: password.slice(0, at), otp: password.slice(at + 1) }
  }

  /**
   * The second step of a password login whose password was right (see SecondFactor). A code is
   * taken by its method in one statement, so it cannot sign in twice within its window; a
   * recovery code is taken once.
   */
  async loginStep(user: UserRow, otp: string | undefined): Promise<SecondFactor> {
    const methods = await this.repo.confirmedForUser(user.id)
    if (methods.length === 0) return (await this.required(user)) ? 'setup' : 'none'
    const code = otp?.trim() ?? ''
    if (code === '') return 'missing'
    const now = this.now()
    if (isTotpCode(code)) {
      for (const m of methods) {
        const step = totpStep(await this.secretOf(m), code, now)
        if (step !== null && (await this.repo.useStep(m.id, step))) return 'verified'
      }
      return 'incorrect'
    }
    const ok = await this.repo.useRecoveryCode(user.id, tokenHash(normalizeRecoveryCode(code)), now)
    return ok ? 'verified' : 'incorrect'
  }

  /** The site's rule, as the Site fields `require_2fa` and `require_2fa_user_type`. */
  async siteRule(siteId: number): Promise<{ require_2fa: boolean; require_2fa_user_type: string }> {
    const rule = await this.repo.siteRule(siteId)
    return { require_2fa: rule.require_2fa === 1, require_2fa_user_type: rule.require_2fa_user_type }
  }

  async setSiteRule(
    siteId: number,
    input: { require_2fa?: boolean | undefined; require_2fa_user_type?: string | undefined },
  ): Promise<void> {
    const rule: { require_2fa?: number; require_2fa_user_type?: string } = {}
    if (input.require_2fa !== undefined) rule.require_2fa = input.require_2fa ? 1 : 0
    if (input.require_2fa_user_type !== undefined) rule.require_2fa_user_type = input.require_2fa_user_type
    if (Object.keys(rule).length) await this.repo.setSiteRule(siteId, rule)
  }

  private async secretOf(row: TwoFactorMethodRow): Promise<string> {
    return decryptSecret(row.secret, await this.secrets.signingSecret(row.site_id))
  }

  private targetUser(p: Principal, userId: number | undefined): number {
    if (userId !== undefined && userId !== p.user?.id) {
      if (!isSiteAdmin(p))
        throw ERRORS.siteAdminRequired("Only site administrators can see other users' methods")
      return userId
    }
    return ownUser(p).id
  }

  /** A method the caller may see: their own, or any of the site's for a site admin. */
  private async visible(p: Principal, id: number): Promise<TwoFactorMethodRow> {
    const row = await this.repo.find(p.siteId, id)
    if (!row || (row.user_id !== p.user?.id && !isSiteAdmin(p))) throw notFound(id)
    return row
  }
}

/**
 * A session that may only enrol (its user must use two-factor sign-in and has no method yet)
 * reaches only the routes marked `twoFactorSetup`; every other answer is 403
 * `not-authorized/two-factor-authentication-required`.
 */
export function refuseUntilEnrolled(p: Principal, routeAllows: boolean | undefined): void {
  if (p.twoFactorSetup && !routeAllows) {
    throw ERRORS.twoFactorAuthenticationRequired(
      'Two-factor sign-in is required for this user: set up an authenticator first (POST /two_factor_authentication_methods)',
    )
  }
}

function ownUser(p: Principal): UserRow {
  if (!p.user) {
    throw ERRORS.twoFactorAuthenticationError(
      'A site-wide API key has no user to set up two-factor sign-in for',
    )
  }
  return p.user
}

const notFound = (id: number) => ERRORS.notFound(`Two-factor method ${id} not found`)

function toJson(r: TwoFactorMethodRow): TwoFactorMethodJson {
  return {
    id: r.id,
    user_id: r.user_id,
    method_type: r.method_type,
    name: r.name,
    confirmed: r.confirmed_at !== null,
    created_at: formatDateTime(r.created_at)!,
    setup_expires_at: r.confirmed_at === null ? formatDateTime(r.setup_expires_at) : null,
  }
}
