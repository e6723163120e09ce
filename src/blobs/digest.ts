import crypto from 'node:crypto'
import { Transform, type TransformCallback } from 'node:stream'
import zlib from 'node:zlib'
import { type BlobInfo, BlobTooLargeError } from './blob-store.js'
import { bytesRead } from './read-buffers.js'

/** Counts bytes, computes md5, CRC-32 and SHA-256 on the way through, and stops past a size limit. */
export class Digest extends Transform {
  size = 0
  private readonly md5 = crypto.createHash('md5')
  private readonly sha256 = crypto.createHash('sha256')
  private crc = 0
  constructor(private readonly maxBytes = Number.POSITIVE_INFINITY) {
    super()
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    try {
      this.add(chunk)
    } catch (err) {
      done(err as Error)
      return
    }
    done(null, chunk)
  }
  /** Counts and checksums bytes that are read rather than piped through. */
  add(chunk: Buffer): void {
    this.size += chunk.length
    bytesRead(chunk.length)
    if (this.size > this.maxBytes) throw new BlobTooLargeError(this.maxBytes)
    this.md5.update(chunk)
    this.sha256.update(chunk)
    this.crc = zlib.crc32(chunk, this.crc)
  }
  result(key: string): BlobInfo {
    return {
      key,
      size: this.size,
      md5: this.md5.digest('hex'),
      crc32: this.crc.toString(16).padStart(8, '0'),
      sha256: this.sha256.digest('hex'),
    }
  }
}
