import { type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely'
import { parseDateTime } from '../api/datetime.js'
import { ERRORS } from '../api/error-factories.js'
import { normalizePath } from '../api/paths.js'
import type { SqlDialect } from '../db/dialects/dialect.js'

/**
 * The query fields of exports: each takes several values separated by commas (OR within a field,
 * AND across fields); empty values are ignored, and a field whose values are all empty is as if
 * absent (api-spec.md: commas cannot themselves be searched for).
 */

/** The given value of a field, split at commas; empty values dropped. Strings, numbers, booleans. */
export function splitValues(raw: unknown, field: string, trim = false): string[] {
  if (raw === undefined || raw === null) return []
  if (typeof raw !== 'string' && typeof raw !== 'number' && typeof raw !== 'boolean') {
    throw ERRORS.requestParamsInvalid(`${field} must be a string`)
  }
  return String(raw)
    .split(',')
    .map((v) => (trim ? v.trim() : v))
    .filter((v) => v !== '')
}

/** Paths as Wharf compares them: leading and trailing slashes stripped, `..` and control characters refused. */
export function pathValues(raw: unknown, field: string): string[] {
  return splitValues(raw, field).map((v) => normalizePath(v, field))
}

export function integerValues(raw: unknown, field: string): number[] {
  return splitValues(raw, field, true).map((v) => {
    if (!/^-?\d{1,15}$/.test(v)) {
      throw ERRORS.requestParamsInvalid(`${field} takes integers: "${v}" is not one`)
    }
    return Number(v)
  })
}

/** true/false (as booleans, or as text from a query string or XML); several values may be listed. */
export function booleanValues(raw: unknown, field: string): boolean[] {
  if (typeof raw === 'boolean') return [raw]
  return splitValues(raw, field, true).map((v) => {
    const lower = v.toLowerCase()
    if (lower !== 'true' && lower !== 'false') {
      throw ERRORS.requestParamsInvalid(`${field} must be true or false`)
    }
    return lower === 'true'
  })
}

/** The query as stored and shown: each field's value as given, or null. */
export function asGiven(raw: unknown): string | null {
  if (raw === undefined || raw === null) return null
  return String(raw)
}

/** start_at (inclusive) and end_at (exclusive), epoch milliseconds. */
export function timeRange(body: Record<string, unknown>): { start: number | null; end: number | null } {
  const at = (field: string) => {
    const raw = body[field]
    if (raw === undefined || raw === null || raw === '') return null
    return parseDateTime(raw, field)
  }
  return { start: at('start_at'), end: at('end_at') }
}

type Eb = ExpressionBuilder<any, any>

/** `lower(column)` equals one of the paths. */
export function pathIn(eb: Eb, dialect: SqlDialect, column: string, paths: string[]): Expression<SqlBool> {
  const col = sql.ref(column)
  return eb(
    sql`lower(${col})`,
    'in',
    paths.map((p) => dialect.lowerLike(p)),
  )
}

/** The record's path is one of the folders or lies inside one (case-insensitive); '' is everything. */
export function inFolders(
  eb: Eb,
  dialect: SqlDialect,
  column: string,
  folders: string[],
): Expression<SqlBool> {
  const col = sql.ref(column)
  if (folders.includes('')) return sql<SqlBool>`1 = 1`
  return eb.or(
    folders.map((f) => {
      const key = dialect.lowerLike(f)
      const prefix = `${key}/`
      return sql<SqlBool>`(lower(${col}) = ${key} or substr(lower(${col}), 1, ${[...prefix].length}) = ${prefix})`
    }),
  )
}

/** The column contains one of the values, ignoring letter case. */
export function containsAny(
  eb: Eb,
  dialect: SqlDialect,
  column: string,
  values: string[],
): Expression<SqlBool> {
  const col = sql.ref(column)
  const find = sql.raw(dialect.findFunction)
  return eb.or(values.map((v) => sql<SqlBool>`${find}(lower(${col}), ${dialect.lowerLike(v)}) > 0`))
}
