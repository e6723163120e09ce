import { type Insertable, type Kysely, sql } from 'kysely'
import { Repository } from '../../db/repository.js'
import type { Database, SessionsTable } from '../../db/schema.js'

/** The sessions table: rows keyed by the hash of the session id, never the id itself. */
export class SessionRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new SessionRepository(db, this.dialect) as this
  }

  async insert(values: Insertable<SessionsTable>): Promise<void> {
    await this.db.insertInto('sessions').values(values).execute()
  }

  /** The session's user, with the session's idle clock and interface beside the user's columns. */
  findWithUser(hash: string) {
    return this.db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .selectAll('users')
      .select([
        'sessions.last_active_at as session_last_active_at',
        'sessions.interface as session_interface',
        'sessions.two_factor_setup as session_two_factor_setup',
      ])
      .where('sessions.id_hash', '=', hash)
      .executeTakeFirst()
  }

  async touch(hash: string, now: number): Promise<void> {
    await this.db.updateTable('sessions').set({ last_active_at: now }).where('id_hash', '=', hash).execute()
  }

  async delete(hash: string): Promise<void> {
    await this.db.deleteFrom('sessions').where('id_hash', '=', hash).execute()
  }

  async deleteForUser(userId: number): Promise<void> {
    await this.db.deleteFrom('sessions').where('user_id', '=', userId).execute()
  }

  /** Every session of the user but one (the one making a change). */
  async deleteOthers(userId: number, keepHash: string): Promise<void> {
    await this.db
      .deleteFrom('sessions')
      .where('user_id', '=', userId)
      .where('id_hash', '!=', keepHash)
      .execute()
  }

  /** The site's sessions idle since before `before`. */
  async deleteIdle(siteId: number, before: number): Promise<void> {
    await this.db
      .deleteFrom('sessions')
      .where('site_id', '=', siteId)
      .where('last_active_at', '<', before)
      .execute()
  }

  /**
   * Counts one reauthentication try in the session's window in one statement, so concurrent
   * tries cannot all read the same counters: a window started at or before `expired` begins anew
   * at `now`. False when the window is full (or the session gone).
   */
  async reserveReauth(hash: string, now: number, expired: number, maxPerWindow: number): Promise<boolean> {
    const reserved = await this.db
      .updateTable('sessions')
      .set({
        reauth_window_start: sql`case when reauth_window_start <= ${expired} then ${now} else reauth_window_start end`,
        reauth_window_count: sql`case when reauth_window_start <= ${expired} then 1 else reauth_window_count + 1 end`,
      })
      .where('id_hash', '=', hash)
      .where((eb) =>
        eb.or([eb('reauth_window_start', '<=', expired), eb('reauth_window_count', '<', maxPerWindow)]),
      )
      .returning('id_hash')
      .executeTakeFirst()
    return reserved !== undefined
  }

  /** When the session's reauthentication window began; undefined if the session is gone. */
  async reauthWindowStart(hash: string): Promise<number | undefined> {
    const s = await this.db
      .selectFrom('sessions')
      .select('reauth_window_start')
      .where('id_hash', '=', hash)
      .executeTakeFirst()
    return s?.reauth_window_start
  }

  async clearReauthFailures(hash: string): Promise<void> {
    await this.db.updateTable('sessions').set({ reauth_failures: 0 }).where('id_hash', '=', hash).execute()
  }

  /** One more failed reauthentication: the count after it, or undefined if the session is gone. */
  async countReauthFailure(hash: string): Promise<number | undefined> {
    const counted = await this.db
      .updateTable('sessions')
      .set({ reauth_failures: sql`reauth_failures + 1` })
      .where('id_hash', '=', hash)
      .returning('reauth_failures')
      .executeTakeFirst()
    return counted?.reauth_failures
  }
}
