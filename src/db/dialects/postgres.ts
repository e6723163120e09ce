import { sql } from 'kysely'
import type { SqlDialect } from './dialect.js'

export const POSTGRES: SqlDialect = {
  name: 'postgres',
  skipLocked: true,
  idIn: (ids) => sql<boolean>`id = any(array(${ids}))`,
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
  writableCte: true,
  notify: true,
  asyncCommit: sql<boolean>`set_config('synchronous_commit', 'off', true) = 'off'`,
  asText: (expression) => sql<string>`cast(${expression} as text)`,
  isoSeconds: (column) =>
    sql<string>`to_char(to_timestamp(${sql.ref(column)} / 1000) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`,
  csvCopy: (select) => `copy (${select}) to stdout (format csv)`,
  crlfLines: (line, orderBy) =>
    sql`string_agg(${sql.ref(line)}, E'\r\n' order by ${sql.ref(orderBy)}) || E'\r\n'`,
  analyze: (table) => sql`analyze ${sql.table(table)}`,
}
