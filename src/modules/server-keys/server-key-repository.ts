import type { Kysely } from 'kysely'
import { Repository } from '../../db/repository.js'
import type { Database } from '../../db/schema.js'

/** The server_keys table: each key set, stored once and never changed. */
export class ServerKeyRepository extends Repository {
  on(db: Kysely<Database>): this {
    return new ServerKeyRepository(db, this.dialect) as this
  }

  async find(name: string): Promise<string | null> {
    const row = await this.db
      .selectFrom('server_keys')
      .select('value')
      .where('name', '=', name)
      .executeTakeFirst()
    return row?.value ?? null
  }

  /**
   * Stores `value` under `name` unless a value is there already, and returns the one stored: of
   * two processes proposing at once, both get the first one's.
   */
  async insertIfAbsent(name: string, value: string, now: number): Promise<string> {
    await this.db
      .insertInto('server_keys')
      .values({ name, value, created_at: now })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute()
    const stored = await this.find(name)
    if (stored === null) throw new Error(`The server key set ${name} vanished as it was stored`)
    return stored
  }
}
