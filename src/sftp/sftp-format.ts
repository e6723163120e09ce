import type { Attributes } from 'ssh2'
import ssh2 from 'ssh2'
import { ApiError } from '../api/errors.js'
import type { FsEntry } from '../modules/files/vfs/file-system.js'

export const STATUS = ssh2.utils.sftp.STATUS_CODE
export const OPEN_MODE = ssh2.utils.sftp.OPEN_MODE

const DIR_MODE = 0o040755
const FILE_MODE = 0o100644

/** SFTP attributes of an entry: times in seconds, no owner (every file belongs to the site). */
export function attrsOf(e: FsEntry): Attributes {
  const mtime = Math.floor((e.providedMtime ?? e.mtime) / 1000)
  return {
    mode: e.type === 'directory' ? DIR_MODE : FILE_MODE,
    uid: 0,
    gid: 0,
    size: e.size,
    atime: mtime,
    mtime,
  }
}

/** The modification time (epoch ms) a SETSTAT or FSETSTAT sets, or null when it sets none. */
export function mtimeOf(attrs: Partial<Attributes> | undefined): number | null {
  const mtime = attrs?.mtime
  return typeof mtime === 'number' && Number.isFinite(mtime) ? mtime * 1000 : null
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']

/** The `ls -l` line clients such as OpenSSH's `sftp` print as they get it. */
export function longnameOf(e: FsEntry, now: number): string {
  const kind = e.type === 'directory' ? 'drwxr-xr-x' : '-rw-r--r--'
  const t = new Date(e.providedMtime ?? e.mtime)
  const recent = Math.abs(now - t.getTime()) < 182 * 86_400_000
  const day = String(t.getUTCDate()).padStart(2, ' ')
  const when = recent
    ? `${String(t.getUTCHours()).padStart(2, '0')}:${String(t.getUTCMinutes()).padStart(2, '0')}`
    : ` ${t.getUTCFullYear()}`
  return `${kind}    1 wharf    wharf    ${String(e.size).padStart(12, ' ')} ${MONTHS[t.getUTCMonth()]} ${day} ${when} ${e.name}`
}

/** The SFTP status (and message) of a failed operation. */
export function statusOf(err: unknown): { code: number; message: string } {
  if (!(err instanceof ApiError)) return { code: STATUS.FAILURE, message: 'Internal error' }
  if (err.type.startsWith('not-found')) return { code: STATUS.NO_SUCH_FILE, message: err.message }
  // A name a folder behavior refuses: SFTP v3 has no code for a bad name (v5's INVALID_FILENAME is
  // not what OpenSSH speaks), and "Permission denied" is what the site's rule amounts to.
  // A folder whose subfolders a folder behavior locks is denied permission the same way.
  if (
    err.type === 'processing-failure/invalid-file-type' ||
    err.type === 'processing-failure/invalid-filename' ||
    err.type === 'processing-failure/folder-locked' ||
    err.type === 'processing-failure/subfolder-locked'
  ) {
    return { code: STATUS.PERMISSION_DENIED, message: err.message }
  }
  if (err.type.startsWith('not-authorized') || err.type.startsWith('not-authenticated')) {
    return { code: STATUS.PERMISSION_DENIED, message: err.message }
  }
  return { code: STATUS.FAILURE, message: err.message }
}

/**
 * A client's path as a Wharf path: absolute or relative to the root (every user's home is `/`),
 * `.` and empty segments dropped. `..` is left in, for the facade to refuse: SFTP clients resolve
 * it themselves (through REALPATH), so one that sends it is confused or probing.
 */
export function wharfPath(raw: string): string {
  return raw
    .split('/')
    .filter((s) => s !== '' && s !== '.')
    .join('/')
}

/** REALPATH: the canonical absolute form, `..` resolved (never above the root). */
export function realPath(raw: string): string {
  const out: string[] = []
  for (const s of raw.split('/')) {
    if (s === '' || s === '.') continue
    if (s === '..') out.pop()
    else out.push(s)
  }
  return `/${out.join('/')}`
}
