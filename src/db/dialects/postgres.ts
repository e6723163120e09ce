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
}
