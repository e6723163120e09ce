import type { Kysely } from 'kysely'
import { ERRORS } from '../../api/error-factories.js'
import { addModelError, type ModelErrors } from '../../api/errors.js'
import type { Database } from '../../db/schema.js'
import type { Principal, UserRow } from '../../identity/principal.js'
import { verifyPassword } from '../../security/secrets.js'
import type { PasswordRepository } from './password-repository.js'
import {
  checkAgainstRules,
  MAX_PRIOR_CEILING,
  type PasswordRules,
  rulesFromColumns,
} from './password-rules.js'

const DAY_MS = 24 * 60 * 60 * 1000
/**
 * How long a process reuses a site's rules before reading them again: a change made through this
 * process applies at once, one made through another process sharing PostgreSQL within this time.
 */
const RULES_CACHE_MS = 5_000

/** Why a user's password must be changed before anything else: the flag, or its age. */
export type ChangeReason = 'require_password_change' | 'password_expired'

/** What the User resource shows of the password's age. */
export interface PasswordAge {
  password_expired: boolean
  password_expire_at: number | null
  days_remaining_until_password_expire: number | null
}

/**
 * The site's password rules, applied wherever a password is set (user create and update, the
 * user's own change, `wharf users reset-password`), and the state they lead to: a user who must
 * change the password (flagged, or expired) gets a session that can do nothing else, and no
 * password login on SFTP, FTP or WebDAV (docs/decisions.md, "Password rules").
 */
export class PasswordPolicy {
  private readonly cache = new Map<number, { rules: PasswordRules; at: number }>()

  constructor(
    readonly repo: PasswordRepository,
    private readonly now: () => number = Date.now,
  ) {}

  async rules(siteId: number): Promise<PasswordRules> {
    const now = this.now()
    const hit = this.cache.get(siteId)
    if (hit && now - hit.at < RULES_CACHE_MS && now >= hit.at) return hit.rules
    const rules = rulesFromColumns(await this.repo.rules(siteId))
    this.cache.set(siteId, { rules, at: now })
    return rules
  }

  /** After a change of the rules through this process. */
  forget(siteId: number): void {
    this.cache.delete(siteId)
  }

  /**
   * Adds to `errors` every rule a new password breaks: the site's rules, the username, and, for an
   * existing user, the latest `max_prior_passwords` passwords (the current one first). A user who
   * must change the password may never set the current one again.
   */
  async check(
    siteId: number,
    password: string,
    who: { username: string; user?: UserRow | null },
    errors: ModelErrors,
  ): Promise<void> {
    const rules = await this.rules(siteId)
    checkAgainstRules(rules, password, who.username, errors)
    const user = who.user
    if (!user?.password_hash) return
    const mustChange = this.changeReason(user, rules) !== null
    const count = Math.max(rules.maxPrior, mustChange ? 1 : 0)
    if (count === 0) return
    const hashes = [user.password_hash, ...(await this.repo.priorHashes(user.id, count - 1))]
    for (const hash of hashes) {
      if (await verifyPassword(password, hash)) {
        const message =
          rules.maxPrior > 1
            ? `must not be one of your last ${rules.maxPrior} passwords`
            : 'must not be the current password'
        addModelError(errors, 'password', message)
        return
      }
    }
  }

  /** In the transaction that replaces `user`'s password: keeps the old hash for the history rule. */
  async replaced(db: Kysely<Database>, user: UserRow, now: number): Promise<void> {
    if (!user.password_hash) return
    await this.repo.on(db).remember(user.id, user.password_hash, now, MAX_PRIOR_CEILING)
  }

  /**
   * When the user's password stops being valid: the shorter of the user's own
   * `password_validity_days` and the site's, from `password_set_at`; null if neither applies.
   * Shared/Bot users cannot change their own password, so expiry and the flag never apply to them.
   */
  expiresAt(user: UserRow, rules: PasswordRules): number | null {
    if (user.self_managed !== 1 || user.password_set_at === null || !user.password_hash) return null
    const days = [user.password_validity_days, rules.validityDays].filter(
      (d): d is number => d !== null && d > 0,
    )
    if (days.length === 0) return null
    return user.password_set_at + Math.min(...days) * DAY_MS
  }

  changeReason(user: UserRow, rules: PasswordRules): ChangeReason | null {
    if (user.self_managed !== 1 || !user.password_hash) return null
    if (user.require_password_change === 1) return 'require_password_change'
    const at = this.expiresAt(user, rules)
    return at !== null && at <= this.now() ? 'password_expired' : null
  }

  age(user: UserRow, rules: PasswordRules): PasswordAge {
    const at = this.expiresAt(user, rules)
    const now = this.now()
    return {
      password_expired: at !== null && at <= now,
      password_expire_at: at,
      days_remaining_until_password_expire: at === null ? null : Math.max(0, Math.ceil((at - now) / DAY_MS)),
    }
  }

  /** Why a password login of this user must be refused (a protocol cannot ask for a new password). */
  async loginRefusal(user: UserRow): Promise<ChangeReason | null> {
    return this.changeReason(user, await this.rules(user.site_id))
  }

  /**
   * A session whose user must change the password reaches only what changing it needs (`allowed`
   * routes): anything else is 403 `not-authorized/password-change-required`. API keys are their own
   * credential and are never held back. True when the session is held back and the route is one
   * it may use.
   */
  async restrictSession(p: Principal, allowed: boolean): Promise<boolean> {
    if (!p.sessionHash || !p.user) return false
    const reason = this.changeReason(p.user, await this.rules(p.siteId))
    if (reason === null) return false
    if (allowed) return true
    throw ERRORS.passwordChangeRequired(
      reason === 'password_expired'
        ? 'Your password has expired: set a new one (PATCH /users/{id} with password) before anything else'
        : 'You must change your password (PATCH /users/{id} with password) before anything else',
    )
  }
}
