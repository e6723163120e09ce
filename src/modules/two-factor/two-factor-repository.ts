import type { Insertable, Kysely, Selectable } from 'kysely'
import { Repository } from '../../db/repository.js'
import type { Database, TwoFactorMethodsTable } from '../../db/schema.js'

export type TwoFactorMethodRow = Selectable<TwoFactorMethodsTable>

/** Users' two-factor methods, their recovery codes, and the site's and sessions' 2FA columns. */
export class TwoFactorRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new TwoFactorRepository(db, this.dialect) as this
  }

  insert(values: Insertable<TwoFactorMethodsTable>): Promise<TwoFactorMethodRow> {
    return this.db.insertInto('two_factor_methods').values(values).returningAll().executeTakeFirstOrThrow()
  }

  find(siteId: number, id: number): Promise<TwoFactorMethodRow | undefined> {
    return this.db
      .selectFrom('two_factor_methods')
      .selectAll()
      .where('site_id', '=', siteId)
      .where('id', '=', id)
      .executeTakeFirst()
  }

  forUser(userId: number): Promise<TwoFactorMethodRow[]> {
    return this.db
      .selectFrom('two_factor_methods')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('id')
      .execute()
  }

  confirmedForUser(userId: number): Promise<TwoFactorMethodRow[]> {
    return this.db
      .selectFrom('two_factor_methods')
      .selectAll()
      .where('user_id', '=', userId)
      .where('confirmed_at', 'is not', null)
      .orderBy('id')
      .execute()
  }

  async hasConfirmed(userId: number): Promise<boolean> {
    const row = await this.db
      .selectFrom('two_factor_methods')
      .select('id')
      .where('user_id', '=', userId)
      .where('confirmed_at', 'is not', null)
      .limit(1)
      .executeTakeFirst()
    return row !== undefined
  }

  /** Unconfirmed methods of the user whose setup time is over. */
  async deleteExpiredSetups(userId: number, now: number): Promise<void> {
    await this.db
      .deleteFrom('two_factor_methods')
      .where('user_id', '=', userId)
      .where('confirmed_at', 'is', null)
      .where('setup_expires_at', '<=', now)
      .execute()
  }

  /** Confirms a method once, with the step of the code that confirmed it; false if already confirmed. */
  async confirm(id: number, now: number, step: number): Promise<boolean> {
    const r = await this.db
      .updateTable('two_factor_methods')
      .set({ confirmed_at: now, last_counter: step })
      .where('id', '=', id)
      .where('confirmed_at', 'is', null)
      .executeTakeFirst()
    return Number(r.numUpdatedRows) === 1
  }

  /**
   * Takes the step of an accepted code, in one statement: of two logins with the same code (or
   * a code of an earlier step) only the first succeeds.
   */
  async useStep(id: number, step: number): Promise<boolean> {
    const r = await this.db
      .updateTable('two_factor_methods')
      .set({ last_counter: step })
      .where('id', '=', id)
      .where((eb) => eb.or([eb('last_counter', 'is', null), eb('last_counter', '<', step)]))
      .executeTakeFirst()
    return Number(r.numUpdatedRows) === 1
  }

  async delete(id: number): Promise<void> {
    await this.db.deleteFrom('two_factor_methods').where('id', '=', id).execute()
  }

  async replaceRecoveryCodes(siteId: number, userId: number, hashes: string[], now: number): Promise<void> {
    await this.deleteRecoveryCodes(userId)
    await this.db
      .insertInto('two_factor_recovery_codes')
      .values(hashes.map((code_hash) => ({ site_id: siteId, user_id: userId, code_hash, created_at: now })))
      .execute()
  }

  async deleteRecoveryCodes(userId: number): Promise<void> {
    await this.db.deleteFrom('two_factor_recovery_codes').where('user_id', '=', userId).execute()
  }

  /** Uses an unused recovery code of the user, once: false when there is none with this hash. */
  async useRecoveryCode(userId: number, hash: string, now: number): Promise<boolean> {
    const r = await this.db
      .updateTable('two_factor_recovery_codes')
      .set({ used_at: now })
      .where('user_id', '=', userId)
      .where('code_hash', '=', hash)
      .where('used_at', 'is', null)
      .executeTakeFirst()
    return Number(r.numUpdatedRows) === 1
  }

  /** The user's sessions that could only enrol become full sessions. */
  async endSetupSessions(userId: number): Promise<void> {
    await this.db
      .updateTable('sessions')
      .set({ two_factor_setup: 0 })
      .where('user_id', '=', userId)
      .where('two_factor_setup', '=', 1)
      .execute()
  }

  siteRule(siteId: number) {
    return this.db
      .selectFrom('sites')
      .select(['require_2fa', 'require_2fa_user_type'])
      .where('id', '=', siteId)
      .executeTakeFirstOrThrow()
  }

  async setSiteRule(siteId: number, rule: { require_2fa?: number; require_2fa_user_type?: string }) {
    await this.db.updateTable('sites').set(rule).where('id', '=', siteId).execute()
  }
}
