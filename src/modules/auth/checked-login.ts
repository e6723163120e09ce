import type { Principal } from '../../identity/principal.js'
import type { ProtocolSession } from './protocol-login.js'

/**
 * How long a transfer connection uses its login before reading it again: a user disabled, a key
 * deleted or a session ended meanwhile stops working within this time, at the next command.
 */
export const LOGIN_RECHECK_MS = 30_000

/**
 * A connection's login and what the front end derives from its principal (its file tree), read
 * again (`ProtocolSession.refresh`) before use once `everyMs` has passed since the last read.
 * Re-reading on every command would cost a database read per command of a busy transfer.
 */
export class CheckedLogin<T> {
  private last: T
  private checkedAt: number

  constructor(
    readonly session: ProtocolSession,
    private readonly derive: (principal: Principal) => T,
    private readonly now: () => number,
    private readonly everyMs = LOGIN_RECHECK_MS,
  ) {
    this.last = derive(session.principal)
    this.checkedAt = now()
  }

  /** What was derived at the last read, without reading again. */
  get value(): T {
    return this.last
  }

  /** What the principal gives now, read again first when due; rejects (401) once the login no longer holds. */
  async current(): Promise<T> {
    if (this.now() - this.checkedAt >= this.everyMs) {
      this.last = this.derive(await this.session.refresh())
      this.checkedAt = this.now()
    }
    return this.last
  }
}
