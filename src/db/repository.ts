import type { Kysely } from 'kysely'
import type { SqlDialect } from './dialects/dialect.js'
import type { Database } from './schema.js'

/**
 * What every module's repository shares: the connection (or the transaction) its statements run
 * on, and the dialect object, the one place it may learn which database that is.
 */
export abstract class Repository {
  constructor(
    readonly db: Kysely<Database>,
    readonly dialect: SqlDialect,
  ) {}

  /** The same repository over another connection: a transaction its caller opened. */
  abstract on(db: Kysely<Database>): this

  /**
   * Runs `work` in one transaction with this repository bound to it; `tx.db` is the transaction,
   * for what must commit with it (the Action of the change, another module's statements).
   */
  transaction<T>(work: (tx: this) => Promise<T>): Promise<T> {
    return this.db.transaction().execute((trx) => work(this.on(trx)))
  }
}
