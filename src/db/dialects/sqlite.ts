import { sql } from 'kysely'
import type { SqlDialect } from './dialect.js'

export const SQLITE: SqlDialect = {
  name: 'sqlite',
  skipLocked: false,
  singleProcess: true,
  rowLocks: false,
  findFunction: 'instr',
  chr: (code) => sql<string>`char(${sql.lit(code)})`,
  lowerLike: (pattern) => pattern.replace(/[A-Z]+/g, (m) => m.toLowerCase()),
  indexHints: true,
  pathIndexPrefix: null,
  // BINARY, SQLite's default collation, already compares code point by code point.
  byteOrder: (text) => sql<string>`${text}`,
  advisoryLock: null,
}
