import { type RawBuilder, sql } from 'kysely'
import type { SqlDialect } from './dialect.js'

export const SQLITE: SqlDialect = {
  name: 'sqlite',
  skipLocked: false,
  idIn: (ids) => sql<boolean>`id in (${ids})`,
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
  writableCte: false,
  notify: false,
  asyncCommit: null,
  asText: (expression) => expression as RawBuilder<string>,
  isoSeconds: (column) => sql<string>`strftime('%Y-%m-%dT%H:%M:%SZ', ${sql.ref(column)} / 1000, 'unixepoch')`,
  csvCopy: null,
  crlfLines: (line, orderBy) =>
    sql`cast(group_concat(${sql.ref(line)}, char(13, 10) order by ${sql.ref(orderBy)}) || char(13, 10) as blob)`,
  analyze: null,
}
