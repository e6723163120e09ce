import type { FsEntry } from '../modules/files/vfs/file-system.js'

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
const HALF_YEAR = 182 * 86400_000

const pad = (n: number, width = 2) => String(n).padStart(width, '0')

/**
 * One `ls -l` line, the format every FTP client parses from LIST. Owner and permissions are
 * nominal: Wharf's folder permissions are per user and path, not Unix modes, so the modes only
 * say file or folder.
 */
export function listLine(e: FsEntry, now: number): string {
  const d = new Date(e.mtime)
  const when =
    Math.abs(now - e.mtime) < HALF_YEAR
      ? `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`
      : ` ${d.getUTCFullYear()}`
  const mode = e.type === 'directory' ? 'drwxr-xr-x' : '-rw-r--r--'
  const size = String(e.type === 'directory' ? 0 : e.size).padStart(12)
  const date = `${MONTHS[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2)} ${when}`
  return `${mode} 1 wharf wharf ${size} ${date} ${e.name}`
}

/** YYYYMMDDHHMMSS(.sss) in UTC: MDTM and the MLSx `modify` fact (RFC 3659). */
export function ftpTime(ms: number): string {
  const d = new Date(ms)
  const base = `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`
  const millis = d.getUTCMilliseconds()
  return millis ? `${base}.${pad(millis, 3)}` : base
}

/** The facts MLSD and MLST give (RFC 3659, 7), followed by a space and the name. */
export function mlsxFacts(e: FsEntry, type = e.type === 'directory' ? 'dir' : 'file'): string {
  const size = e.type === 'directory' ? '' : `size=${e.size};`
  return `type=${type};${size}modify=${ftpTime(e.mtime)};`
}

/** The features FEAT lists (RFC 2389); MLST's facts end with `*` when given by default. */
export const FEATURES = [
  'AUTH TLS',
  'PBSZ',
  'PROT',
  'UTF8',
  'EPSV',
  'PASV',
  'SIZE',
  'MDTM',
  'REST STREAM',
  'TVFS',
  'MLST type*;size*;modify*;',
]
