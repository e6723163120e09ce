import type { Kysely } from 'kysely'
import { Repository } from '../../db/repository.js'
import type { Database } from '../../db/schema.js'
import { RULE_COLUMNS, type RuleColumns } from './password-rules.js'

/** The site's password rules (columns of `sites`) and `password_history`. */
export class PasswordRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new PasswordRepository(db, this.dialect) as this
  }

  async rules(siteId: number): Promise<RuleColumns> {
    return this.db.selectFrom('sites').select(RULE_COLUMNS).where('id', '=', siteId).executeTakeFirstOrThrow()
  }

  async updateRules(siteId: number, patch: Partial<RuleColumns>): Promise<void> {
    await this.db.updateTable('sites').set(patch).where('id', '=', siteId).execute()
  }

  /** The hashes of the user's earlier passwords, latest first. */
  async priorHashes(userId: number, limit: number): Promise<string[]> {
    if (limit <= 0) return []
    const rows = await this.db
      .selectFrom('password_history')
      .select('password_hash')
      .where('user_id', '=', userId)
      .orderBy('id', 'desc')
      .limit(limit)
      .execute()
    return rows.map((r) => r.password_hash)
  }

  /** Keeps a replaced password's hash, and only the latest `keep` of the user's. */
  async remember(userId: number, hash: string, now: number, keep: number): Promise<void> {
    await this.db
      .insertInto('password_history')
      .values({ user_id: userId, password_hash: hash, replaced_at: now })
      .execute()
    const kept = await this.db
      .selectFrom('password_history')
      .select('id')
      .where('user_id', '=', userId)
      .orderBy('id', 'desc')
      .offset(keep)
      .limit(1)
      .executeTakeFirst()
    if (kept)
      await this.db
        .deleteFrom('password_history')
        .where('user_id', '=', userId)
        .where('id', '<=', kept.id)
        .execute()
  }
}
