import { isWithin } from '../../api/paths.js'
import type { AccessView, Capability } from './file-access.js'

const CAPS: Capability[] = ['read', 'write', 'delete', 'list', 'history', 'admin']

/**
 * What a caller who may not list a folder still sees in it. Such a caller reaches the folder only
 * because it leads to folders they have permissions on (AccessView.leadsTo); those folders (the
 * caller's "roots", AccessView.roots) are few, so the visible children are worked out from them, not by scanning
 * the folder: each root below the folder names one child on its way down. The listing query then
 * asks for exactly those children (`path_lower in (…)`), and paging stays plain keyset paging.
 *
 * A child is shown only when it is a root itself or leads to one. Children that a permission
 * without `list` (writeonly) on a folder above happens to cover are not shown: such a permission
 * lets its holder put files there, not see what others put there.
 */
/** Lower-case paths of the children of `folder` the caller may see without listing it. */
export function visibleChildren(access: AccessView, folder: string): string[] {
  const folderLower = folder.toLowerCase()
  const prefix = folderLower === '' ? '' : `${folderLower}/`
  const out = new Set<string>()
  for (const root of access.roots()) {
    const r = root.toLowerCase()
    if (r === folderLower || !isWithin(r, folderLower)) continue
    const child = prefix + r.slice(prefix.length).split('/')[0]
    if (out.has(child)) continue
    if (access.leadsTo(child) || CAPS.some((c) => access.can(child, c))) out.add(child)
  }
  return [...out]
}

/**
 * Lower-case folders inside `scope` whose whole subtree the caller may list: where a search by a
 * caller without `list` on the scope looks. Nested ones are dropped (the outer covers them).
 */
export function listableRegions(access: AccessView, scope: string): string[] {
  const lower = new Set(access.roots().map((r) => r.toLowerCase()))
  const regions = [...lower].filter((r) => isWithin(r, scope) && access.can(r, 'list'))
  return regions.filter((r) => !regions.some((o) => o !== r && isWithin(r, o)))
}
