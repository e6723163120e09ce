/** A unique index said no: SQLite (better-sqlite3) and PostgreSQL (pg) name it differently. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505'
}
