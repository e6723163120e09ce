import crypto from 'node:crypto'
import { Transform, type TransformCallback } from 'node:stream'

/** The digest a `Content-MD5` header declares (RFC 1864: base64 of the 16 bytes), or null if malformed. */
export function parseContentMd5(header: string): Buffer | null {
  const value = header.trim()
  if (!/^[A-Za-z0-9+/]{22}==$/.test(value)) return null
  return Buffer.from(value, 'base64')
}

/** The bytes that arrived are not those whose md5 the client declared. */
export class ContentMd5Mismatch extends Error {
  constructor(readonly actual: string) {
    super(`The body's md5 is ${actual}`)
    this.name = 'ContentMd5Mismatch'
  }
}

/**
 * Passes a part's bytes through to the store while hashing them, and fails at the end, before
 * the store sees the last of its input, when their md5 is not the declared one: the store then
 * keeps nothing of the part (an earlier copy of it stays), as for any input that fails. The last
 * chunk is held back until the md5 is known: a store that streams a part of known length into S3
 * would otherwise have sent every byte, and S3 kept the part, before the check failed.
 */
export class Md5Check extends Transform {
  private readonly md5 = crypto.createHash('md5')
  private held: Buffer | null = null
  constructor(private readonly expected: Buffer) {
    super()
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.md5.update(chunk)
    const previous = this.held
    this.held = chunk
    done(null, previous ?? undefined)
  }
  override _flush(done: TransformCallback): void {
    const actual = this.md5.digest()
    if (!actual.equals(this.expected)) {
      done(new ContentMd5Mismatch(actual.toString('hex')))
      return
    }
    done(null, this.held ?? undefined)
  }
}
