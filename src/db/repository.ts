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

/** Repositories bound to one transaction, with the transaction itself as `db`. */
export type UnitOfWork<R> = R & { db: Kysely<Database> }

/**
 * Runs `work` in one transaction with every repository of `repos` bound to it, for a change that
 * spans repositories (a file, its upload and the Action that records it commit together); `tx.db`
 * is the transaction, for other modules' statements.
 */
export function unitOfWork<R extends { [K in keyof R]: Repository }, T>(
  repos: R,
  work: (tx: UnitOfWork<R>) => Promise<T>,
): Promise<T> {
  const all = Object.entries(repos) as [string, Repository][]
  const first = all[0]?.[1]
  if (!first) throw new Error('A unit of work needs at least one repository')
  return first.db.transaction().execute((trx) => {
    const bound = Object.fromEntries(all.map(([name, repo]) => [name, repo.on(trx)]))
    return work({ ...(bound as R), db: trx })
  })
}
