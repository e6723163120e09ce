import { ERRORS } from '../api/error-factories.js'
import type { ApiError } from '../api/errors.js'

/** A unique index said no: SQLite (better-sqlite3) and PostgreSQL (pg) name it differently. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505'
}

/** A foreign key said no (the row it names is gone): SQLite and PostgreSQL name it differently. */
export function isForeignKeyViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || code === '23503'
}

/**
 * Storage is full, as each layer says it: SQLite `SQLITE_FULL` (better-sqlite3), PostgreSQL
 * SQLSTATE 53100 `disk_full` (pg), and the file system's ENOSPC (no space) or EDQUOT (quota).
 */
export function isStorageFull(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return code === 'SQLITE_FULL' || code === '53100' || code === 'ENOSPC' || code === 'EDQUOT'
}

/** The one answer to a full disk or database: 507 `service-unavailable/storage-full`, its cause kept for the log. */
export function storageFull(cause: unknown): ApiError {
  return ERRORS.storageFull(
    'The server’s storage is full, so nothing was stored; try again once space has been freed',
    { cause },
  )
}

/** A driver or file-system error as the API's error when it means storage is full; otherwise itself. */
export function translateStorageError(err: unknown): unknown {
  return isStorageFull(err) ? storageFull(err) : err
}
