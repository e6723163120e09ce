import type { FileRow } from '../file-repository.js'

/**
 * A file or folder as a transfer protocol shows it: what `ls -l`, PROPFIND and MLSD need, with
 * times as epoch milliseconds. Paths are Wharf paths: no leading slash, '' for the root.
 */
export interface FsEntry {
  path: string
  name: string
  type: 'file' | 'directory'
  /** Bytes (0 for a folder). */
  size: number
  /** When Wharf last changed it. */
  mtime: number
  /** The client's own modification time, if one was given at upload. */
  providedMtime: number | null
  createdAt: number
  md5: string | null
}

export function entryOfRow(r: FileRow): FsEntry {
  return {
    path: r.path,
    name: r.name,
    type: r.type,
    size: r.size,
    mtime: r.mtime,
    providedMtime: r.provided_mtime,
    createdAt: r.created_at,
    md5: r.md5,
  }
}

/** The root folder has no row: it always exists and is always a folder. */
export function rootEntry(now: number): FsEntry {
  return {
    path: '',
    name: '',
    type: 'directory',
    size: 0,
    mtime: now,
    providedMtime: null,
    createdAt: 0,
    md5: null,
  }
}
