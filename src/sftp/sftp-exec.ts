import crypto from 'node:crypto'
import type { Logger } from 'pino'
import type { ServerChannel } from 'ssh2'
import { ERRORS } from '../api/error-factories.js'
import { ApiError } from '../api/errors.js'
import type { UserFileSystem } from '../modules/files/vfs/file-system.js'
import { wharfPath } from './sftp-format.js'

/** The only commands an SSH exec channel runs: a checksum of one file, as rclone asks for it. */
const COMMANDS = { md5sum: 'md5', sha1sum: 'sha1', sha256sum: 'sha256' } as const
type Command = keyof typeof COMMANDS

/** What a bare command (no path) hashes of its standard input at most, as a probe does. */
export const EXEC_STDIN_BYTES = 64 * 1024

export interface ExecRequest {
  command: Command
  /** The one path, unquoted; null for the bare command, which hashes its standard input. */
  path: string | null
}

/**
 * Reads `md5sum PATH`, `sha1sum PATH`, `sha256sum PATH` or the bare command, with the path as a
 * POSIX shell gives it to the program: backslash escapes, single and double quotes (rclone
 * escapes with backslashes). Anything else (another command, options, two paths, a pipe, a
 * variable, a wildcard) is null: the channel request is refused.
 */
export function parseExec(line: string): ExecRequest | null {
  const m = /^(md5sum|sha1sum|sha256sum)(?:[ \t]+([\s\S]*?))?[ \t]*$/.exec(line)
  if (!m) return null
  const command = m[1] as Command
  if (m[2] === undefined || m[2] === '') return { command, path: null }
  const path = shellWord(m[2])
  return path === null || path === '' || path.startsWith('-') ? null : { command, path }
}

/** One shell word, unquoted, or null when the text is not exactly one plain word. */
function shellWord(text: string): string | null {
  let out = ''
  let i = 0
  while (i < text.length) {
    const c = text[i]!
    if (c === '\\') {
      if (i + 1 >= text.length) return null
      out += text[i + 1]
      i += 2
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1)
      if (end === -1) return null
      out += text.slice(i + 1, end)
      i = end + 1
    } else if (c === '"') {
      i++
      while (i < text.length && text[i] !== '"') {
        if (text[i] === '$' || text[i] === '`') return null
        if (text[i] === '\\' && i + 1 < text.length && '"\\$`\n'.includes(text[i + 1]!)) i++
        out += text[i]
        i++
      }
      if (i >= text.length) return null
      i++
    } else if (/[\s|&;<>()$`*?[\]#~{}!=]/.test(c)) {
      // Unquoted, these would be the shell's own business: more than one word, or not plain.
      return null
    } else {
      out += c
      i++
    }
  }
  return out
}

/**
 * Answers one checksum command on an accepted exec channel, as coreutils would print it:
 * `<hex>  <path>` (or `<hex>  -` for standard input) and exit status 0; a file that cannot be
 * read is a message on stderr and exit status 1. The path is the client's, the permissions those
 * of a download.
 */
export async function runExec(
  stream: ServerChannel,
  req: ExecRequest,
  files: () => Promise<UserFileSystem>,
  logger: Logger,
): Promise<void> {
  const algorithm = COMMANDS[req.command]
  let out: string
  let code = 0
  try {
    if (req.path === null) out = `${await hashStdin(stream, algorithm)}  -\n`
    else out = `${await (await files()).checksum(wharfPath(req.path), algorithm)}  ${req.path}\n`
  } catch (err) {
    if (!(err instanceof ApiError)) logger.error({ err }, 'SSH checksum command failed')
    out = ''
    code = 1
    const reason = err instanceof ApiError ? err.message : 'Internal error'
    stream.stderr.write(`${req.command}: ${req.path ?? '-'}: ${reason}\n`)
  }
  if (out) stream.write(out)
  stream.exit(code)
  stream.end()
}

/** The hash of what the client sends until it closes its side (a probe sends nothing). */
function hashStdin(stream: ServerChannel, algorithm: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = crypto.createHash(algorithm)
    let bytes = 0
    let settled = false
    const onData = (chunk: Buffer) => {
      if (settled) return
      bytes += chunk.length
      if (bytes > EXEC_STDIN_BYTES) {
        settled = true
        reject(ERRORS.badRequest(`standard input is limited to ${EXEC_STDIN_BYTES} bytes`))
        return
      }
      hash.update(chunk)
    }
    const finish = () => {
      if (settled) return
      settled = true
      resolve(hash.digest('hex'))
    }
    stream.on('data', onData)
    stream.once('end', finish)
    stream.once('close', finish)
  })
}
