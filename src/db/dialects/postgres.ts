import { sql } from 'kysely'
import type { SqlDialect } from './dialect.js'

export const POSTGRES: SqlDialect = {
  name: 'postgres',
  skipLocked: true,
  singleProcess: false,
  rowLocks: true,
  findFunction: 'strpos',
  chr: (code) => sql<string>`chr(${sql.lit(code)})`,
  lowerLike: (pattern) => pattern.toLowerCase(),
  indexHints: false,
  pathIndexPrefix: 500,
  byteOrder: (text) => sql<string>`(${text} collate "C")`,
  advisoryLock: (key, mode) =>
    mode === 'exclusive'
      ? sql`select pg_advisory_xact_lock(${key})`
      : sql`select pg_advisory_xact_lock_shared(${key})`,
}
