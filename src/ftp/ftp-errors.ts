import { ApiError } from '../api/errors.js'
import { FtpPathError } from './ftp-paths.js'

/** A reply a command ends with instead of its success. */
export class FtpReply extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
  }
}

/** Raised by commands that need a state the session is not in (login, RNFR, TLS). */
export const reply = (code: number, message: string) => new FtpReply(code, message)

/**
 * The FTP reply for a failure. The facade's ApiErrors keep their message (written for users);
 * `creating` says the command names a new file or folder, whose bad name is 553 (RFC 959).
 * Anything else is a fault of the server: 451 with no detail, the error goes to the log.
 */
export function replyOf(err: unknown, creating = false): { code: number; text: string; fault: boolean } {
  if (err instanceof FtpReply) return { code: err.code, text: err.message, fault: false }
  if (err instanceof FtpPathError) return { code: creating ? 553 : 550, text: err.message, fault: false }
  if (err instanceof ApiError) {
    const text = oneLine(err.message)
    if (err.type === 'service-unavailable/storage-full') return { code: 452, text, fault: false }
    if (err.type === 'bad-request/invalid-path' || err.type === 'processing-failure/path-too-long') {
      return { code: creating ? 553 : 550, text, fault: false }
    }
    // A name a folder behavior refuses (its extension, pattern or length): RFC 959's 553.
    if (
      err.type === 'processing-failure/invalid-file-type' ||
      err.type === 'processing-failure/invalid-filename'
    ) {
      return { code: 553, text, fault: false }
    }
    if (err.status === 401) return { code: 530, text, fault: false }
    if (err.status === 429) return { code: 421, text, fault: false }
    if (err.status >= 400 && err.status < 500) return { code: 550, text, fault: false }
  }
  return { code: 451, text: 'Local error in processing', fault: true }
}

/** Replies are lines: a message never breaks one. */
export function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ')
}
