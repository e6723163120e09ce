import { hasControlCharacter } from './control-characters.js'
import { ERRORS } from './error-factories.js'

export const MAX_PATH_LENGTH = 5000

/**
 * Normalises a path parameter: strips leading and trailing slashes, refuses `.`/`..` segments,
 * empty segments, NUL and control characters, C0 and C1 (400 bad-request/invalid-path) and more than 5000
 * characters (422 processing-failure/path-too-long). The root folder is ''.
 */
export function normalizePath(raw: string, field = 'path'): string {
  const p = raw.replace(/^\/+|\/+$/g, '')
  if (p.length > MAX_PATH_LENGTH) {
    throw ERRORS.pathTooLong(`${field} is longer than ${MAX_PATH_LENGTH} characters`)
  }
  if (hasControlCharacter(p)) {
    throw ERRORS.invalidPath(`${field} must not contain control characters`)
  }
  if (p !== '' && p.split('/').some((s) => s === '' || s === '.' || s === '..')) {
    throw ERRORS.invalidPath(`${field} must not contain empty, "." or ".." segments`)
  }
  return p
}

/** Paths compare case-insensitively, as on Files.com. */
export function isWithin(path: string, folder: string): boolean {
  const p = path.toLowerCase()
  const f = folder.toLowerCase()
  return f === '' || p === f || p.startsWith(`${f}/`)
}

/** The folder a (normalized) path lies in: '' for a name in the root. */
export function parentOf(path: string): string {
  const i = path.lastIndexOf('/')
  return i === -1 ? '' : path.slice(0, i)
}

/** The last segment of a (normalized) path. */
export function nameOf(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1)
}
