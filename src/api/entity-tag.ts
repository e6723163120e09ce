/** What a file version's entity tag is made of. */
export interface TaggedVersion {
  md5: string | null
  mtime: number
  size: number
}

/**
 * A file's entity tag, as REST downloads and WebDAV send it: its md5 once known, else its change
 * time and size (never one tag shared by two versions of a file). The md5 is computed in the
 * background after the upload, so a client may hold either tag of the same version.
 */
export function entityTag(v: TaggedVersion): string {
  return v.md5 ? `"${v.md5}"` : provisionalTag(v)
}

/**
 * Whether a tag a client sent (`If-None-Match`, `If-Match`, `If-Range`) names this version: the
 * current tag, or the one it had before its md5 was known, so that a copy fetched in the first
 * seconds after the upload does not look changed once the checksum lands.
 */
export function tagNamesVersion(tag: string, v: TaggedVersion): boolean {
  return tag === provisionalTag(v) || (v.md5 !== null && tag === `"${v.md5}"`)
}

/**
 * Whole seconds: a File's JSON carries its change time to the second, and a tag must not depend on
 * which form of the row a front end read.
 */
function provisionalTag(v: TaggedVersion): string {
  return `"${Math.floor(v.mtime / 1000).toString(16)}-${v.size.toString(16)}"`
}
