import { isWithin } from './paths.js'

/** What matching needs of a behavior row. */
export interface MatchableBehavior {
  id: number
  path: string
  path_lower: string
  behavior: string
  recursive: number
  disable_parent_folder_behavior: number
}

/** `a/b/c` → `['', 'a', 'a/b', 'a/b/c']`: the folder and every folder above it, root first. */
export function foldersAbove(folder: string): string[] {
  const out = ['']
  if (folder === '') return out
  const segments = folder.split('/')
  for (let i = 1; i <= segments.length; i++) out.push(segments.slice(0, i).join('/'))
  return out
}

/**
 * The one rule of inheritance: of the behaviors on `folder` and on the folders above it, those
 * that apply to `folder` (to the files directly in it):
 * - a behavior applies to its own folder, and, when `recursive`, to every folder inside it;
 * - a behavior with `disable_parent_folder_behavior` cancels, for its folder and everything
 *   inside it, the behaviors of its type on the folders above it (it still applies itself).
 * Several behaviors of one type on one folder all apply. `rows` may hold behaviors anywhere (a
 * whole subtree's, for a folder moved or copied): those not on `folder` or above it are skipped.
 * In order: the folder nearest the root first, then by id.
 */
export function applyingAt<T extends MatchableBehavior>(rows: readonly T[], folder: string): T[] {
  const lower = folder.toLowerCase()
  const on = rows.filter((r) => isWithin(lower, r.path_lower))
  // The deepest folder, per type, that cancels what its type inherits from above.
  const cut = new Map<string, number>()
  for (const r of on) {
    if (r.disable_parent_folder_behavior !== 1) continue
    const depth = depthOf(r.path_lower)
    if ((cut.get(r.behavior) ?? -1) < depth) cut.set(r.behavior, depth)
  }
  return on
    .filter((r) => {
      const depth = depthOf(r.path_lower)
      if (depth < (cut.get(r.behavior) ?? -1)) return false
      return r.path_lower === lower || r.recursive === 1
    })
    .sort((a, b) => depthOf(a.path_lower) - depthOf(b.path_lower) || a.id - b.id)
}

function depthOf(path: string): number {
  return path === '' ? 0 : path.split('/').length
}
