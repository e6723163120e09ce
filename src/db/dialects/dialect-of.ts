import { type Kysely, PostgresAdapter } from 'kysely'
import type { SqlDialect } from './dialect.js'
import { POSTGRES } from './postgres.js'
import { SQLITE } from './sqlite.js'

/**
 * The dialect of a Kysely instance or transaction, for code handed only that (a write that joins
 * its caller's transaction). The one place that asks Kysely which database it talks to.
 */
export function dialectOf(db: Kysely<any>): SqlDialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? POSTGRES : SQLITE
}
