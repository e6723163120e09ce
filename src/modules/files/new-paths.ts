import { ERRORS } from '../../api/error-factories.js'
import { normalizePath } from '../../api/paths.js'
import type { Principal } from '../../identity/principal.js'
import type { Author } from './file-repository.js'

/**
 * Normalises a path that names something about to exist (a new folder, the destination of a copy
 * or move). Besides normalizePath's rules, the root cannot be created or replaced, and no segment
 * may end in whitespace: such names look identical to their trimmed twins in every listing and
 * are a classic source of "file not found" confusion. Existing paths are looked up as given, so
 * anything already stored stays reachable.
 */
export function normalizeNewPath(raw: string, field: string): string {
  // Before normalizePath, so that a name ending in a tab gets this more telling refusal rather
  // than the one for control characters.
  if (raw.split('/').some((s) => /\s$/u.test(s))) {
    throw ERRORS.requestParamPathCannotHaveTrailingWhitespace(
      `${field} must not have a name ending in whitespace`,
    )
  }
  const path = normalizePath(raw, field)
  if (path === '') throw ERRORS.invalidPath(`${field} must not be the root folder`)
  return path
}

/** An existing file or folder to act on: never the root. */
export function normalizeExistingPath(raw: string): string {
  const path = normalizePath(raw, 'path')
  if (path === '') throw ERRORS.invalidPath('This operation does not apply to the root folder')
  return path
}

/** Who is making a change, for the created_by / last_modified_by columns. */
export function authorOf(p: Principal): Author {
  return { userId: p.user?.id ?? null, apiKeyId: p.apiKey?.id ?? null }
}
