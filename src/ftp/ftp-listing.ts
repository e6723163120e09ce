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
  const mtime = modifiedAt(e)
  const d = new Date(mtime)
  const when =
    Math.abs(now - mtime) < HALF_YEAR
      ? `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`
      : ` ${d.getUTCFullYear()}`
  const mode = e.type === 'directory' ? 'drwxr-xr-x' : '-rw-r--r--'
  const size = String(e.type === 'directory' ? 0 : e.size).padStart(12)
  const date = `${MONTHS[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2)} ${when}`
  return `${mode} 1 wharf wharf ${size} ${date} ${e.name}`
}

/** The time a listing shows: the client's own (set by MFMT or at upload) when there is one. */
export function modifiedAt(e: FsEntry): number {
  return e.providedMtime ?? e.mtime
}

/** YYYYMMDDHHMMSS(.sss) in UTC: MDTM and the MLSx `modify` fact (RFC 3659). */
export function ftpTime(ms: number): string {
  const d = new Date(ms)
  const base = `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`
  const millis = d.getUTCMilliseconds()
  return millis ? `${base}.${pad(millis, 3)}` : base
}

/**
 * The time of `MFMT YYYYMMDDHHMMSS[.sss] path` (draft-somers-ftp-mfxx), in epoch ms UTC, or null
 * when it is not a real date-time.
 */
export function parseFtpTime(text: string): number | null {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(?:\.(\d{1,3}))?$/.exec(text)
  if (!m) return null
  const [y, mo, d, h, mi, sec] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  const ms = Date.UTC(y, mo - 1, d, h, mi, sec, Number((m[7] ?? '0').padEnd(3, '0')))
  const back = new Date(ms)
  const real =
    back.getUTCFullYear() === y &&
    back.getUTCMonth() === mo - 1 &&
    back.getUTCDate() === d &&
    back.getUTCHours() === h &&
    back.getUTCMinutes() === mi &&
    back.getUTCSeconds() === sec
  return real && y >= 1970 ? ms : null
}

/** The facts MLSD and MLST give (RFC 3659, 7), followed by a space and the name. */
export function mlsxFacts(e: FsEntry, type = e.type === 'directory' ? 'dir' : 'file'): string {
  const size = e.type === 'directory' ? '' : `size=${e.size};`
  return `type=${type};${size}modify=${ftpTime(modifiedAt(e))};`
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
  'MFMT',
  'REST STREAM',
  'TVFS',
  'MLST type*;size*;modify*;',
]
