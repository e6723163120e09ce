import { AddressRanges, parseAddress } from '../../api/address-ranges.js'
import { formatDateTime } from '../../api/datetime.js'
import { ERRORS } from '../../api/error-factories.js'
import { mapPage, type Page } from '../../api/list-spec.js'
import { type Principal, requireSiteAdmin } from '../../identity/principal.js'
import type { SiteSecrets } from '../../security/site-secrets.js'
import { readListRequest } from '../list-request.js'
import type { ModuleSettings } from '../settings.js'
import {
  BANNED_ADDRESS_LIST,
  type BannedAddressRow,
  type LoginDefenderRepository,
} from './login-defender-repository.js'

/** The BannedAddress resource (a Wharf extension): a client address the login defender refuses. */
export interface BannedAddressJson {
  address: string
  banned_at: string
  banned_until: string
  failures: number
}

/**
 * What failed: a `failedlogin` Action's failure_type (`password_mismatch`, `username_not_found`,
 * `locked_out`, `disabled`, `key_mismatch` for an SSH connection whose keys were all refused,
 * and the access refusals: `no_sftp_permission`, `ip_mismatch`, `expired_access`…),
 * `bundle_password` for a share link's wrong password (counted against the address, and against
 * the link under the key `bundle:<id>`, which GET /banned_addresses does not list).
 */
export type FailureKind = string

/**
 * How often a process deletes failures past the window and bans that are over: a failure costs
 * its insert and count, and a stream of failures (an attack, a misconfigured client) does not add
 * two deletes across every site to each one.
 */
const PRUNE_EVERY_MS = 60_000

/** The address as the defender keeps it: IPv4-mapped IPv6 as IPv4, IPv6 in its short form. */
export function normalizeAddress(ip: string): string {
  return parseAddress(ip)?.toString() ?? ip
}

/**
 * The words every front end uses for a banned address (FTP 421, SFTP's banner, REST's message,
 * which starts a sentence and so `capital`).
 */
export function bannedMessage(retryAfterSeconds: number, { capital = false } = {}): string {
  const minutes = Math.max(1, Math.ceil(retryAfterSeconds / 60))
  return `${capital ? 'T' : 't'}oo many failed logins, try again in ${minutes} minute${minutes === 1 ? '' : 's'}`
}

/**
 * Scores failed logins per client address across every way in (REST and the web sign-in, SFTP,
 * FTP, WebDAV), and bans an address that reaches the threshold within the window: while banned,
 * every login from it is refused, a correct password included. Successful logins never count.
 * The state lives in the database, so every node sharing it sees the same bans.
 *
 * A login that is not banned costs one primary-key read (`check`); the writes happen on failures
 * only (`recordFailure`), which also prune what is past the window, at most once a minute.
 */
export class LoginDefender {
  private readonly safe: AddressRanges
  private readonly windowMs: number
  private readonly banMs: number
  private prunedAt = Number.NEGATIVE_INFINITY

  constructor(
    private readonly repo: LoginDefenderRepository,
    private readonly settings: ModuleSettings['loginDefender'],
    private readonly secrets: SiteSecrets,
    private readonly now: () => number = Date.now,
  ) {
    this.safe = new AddressRanges(settings.safeList)
    this.windowMs = settings.windowMinutes * 60_000
    this.banMs = settings.banMinutes * 60_000
  }

  /** Whether the address is on LOGIN_DEFENDER_SAFE_LIST (never counted, never banned). */
  isSafe(ip: string): boolean {
    return this.safe.size > 0 && this.safe.has(ip)
  }

  /** Seconds left of the address's ban, or 0 when it may log in. */
  async banSecondsLeft(siteId: number, ip: string): Promise<number> {
    if (this.isSafe(ip)) return 0
    const until = await this.repo.bannedUntil(siteId, normalizeAddress(ip))
    const now = this.now()
    return until !== undefined && until > now ? Math.max(1, Math.ceil((until - now) / 1000)) : 0
  }

  /** Refuses a banned address: 429 `rate-limited/too-many-login-attempts` with Retry-After. */
  async check(siteId: number, ip: string): Promise<void> {
    const left = await this.banSecondsLeft(siteId, ip)
    if (left > 0) {
      throw ERRORS.tooManyLoginAttempts(bannedMessage(left, { capital: true }), { retryAfter: left })
    }
  }

  /** Scores one failed login; the one that reaches the threshold bans the address. */
  async recordFailure(siteId: number, ip: string, kind: FailureKind): Promise<void> {
    if (this.isSafe(ip)) return
    const address = normalizeAddress(ip)
    const now = this.now()
    // A clock set back (a corrected system time) does not postpone pruning either.
    if (now - this.prunedAt >= PRUNE_EVERY_MS || now < this.prunedAt) {
      this.prunedAt = now
      await this.repo.prune(now - this.windowMs, now)
    }
    const failures = await this.repo.addFailure(siteId, address, kind, now, now - this.windowMs)
    if (failures >= this.settings.threshold) {
      await this.repo.ban(siteId, address, now, now + this.banMs, failures)
    }
  }

  /** GET /banned_addresses: bans still running (site admins). */
  async list(p: Principal, query: Record<string, unknown>): Promise<Page<BannedAddressJson>> {
    requireSiteAdmin(p)
    const list = await readListRequest(this.secrets, p.siteId, BANNED_ADDRESS_LIST, query)
    return mapPage(await this.repo.page(p.siteId, this.now(), list), toJson)
  }

  /** DELETE /banned_addresses/{address}: lifts the ban and forgets the failures behind it. */
  async lift(p: Principal, address: string): Promise<void> {
    requireSiteAdmin(p)
    if (parseAddress(address) === null) {
      throw ERRORS.requestParamsInvalid('address must be an IPv4 or IPv6 address')
    }
    if (!(await this.repo.lift(p.siteId, normalizeAddress(address), this.now()))) {
      throw ERRORS.notFound(`Address ${address} is not banned`)
    }
  }
}

function toJson(r: BannedAddressRow): BannedAddressJson {
  return {
    address: r.address,
    banned_at: formatDateTime(r.banned_at)!,
    banned_until: formatDateTime(r.banned_until)!,
    failures: r.failures,
  }
}
