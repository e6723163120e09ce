import { hasControlCharacter } from '../api/control-characters.js'
import { MAX_PATH_LENGTH } from '../api/paths.js'

/** A path the client may not use, with the reason it is told. */
export class FtpPathError extends Error {}

/**
 * The Wharf path ('' for the root, no leading slash) of an FTP argument, absolute or relative
 * to `cwd` (itself a Wharf path). `.` and `..` are resolved as a shell would, since clients send
 * `CWD ..`; a `..` above the root is refused rather than clamped, so that a client never acts on
 * another folder than the one it named.
 */
export function resolveFtpPath(cwd: string, arg: string): string {
  if (arg.length > MAX_PATH_LENGTH)
    throw new FtpPathError(`Path is longer than ${MAX_PATH_LENGTH} characters`)
  if (hasControlCharacter(arg)) throw new FtpPathError('Path must not contain control characters')
  const parts = arg.startsWith('/') ? [] : cwd.split('/').filter((p) => p !== '')
  for (const seg of arg.split('/')) {
    if (seg === '' || seg === '.') continue
    if (seg === '..') {
      if (parts.length === 0) throw new FtpPathError('Path goes above the root folder')
      parts.pop()
    } else {
      parts.push(seg)
    }
  }
  const path = parts.join('/')
  if (path.length > MAX_PATH_LENGTH)
    throw new FtpPathError(`Path is longer than ${MAX_PATH_LENGTH} characters`)
  return path
}

/** How the client sees a Wharf path: absolute, with a leading slash. */
export function ftpPathOf(path: string): string {
  return `/${path}`
}

/** PWD and MKD put the path in double quotes; a quote inside it is doubled (RFC 959, appendix II). */
export function quotedPath(path: string): string {
  return `"${ftpPathOf(path).replaceAll('"', '""')}"`
}
