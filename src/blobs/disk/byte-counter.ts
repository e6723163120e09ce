import type { Readable } from 'node:stream'
import { BlobTooLargeError } from '../blob-store.js'
import { bytesRead } from '../read-buffers.js'

/** Counts the bytes of a part (checksums come after the upload) and stops past a limit. */
export class Counter {
  size = 0
  constructor(private readonly maxBytes = Number.POSITIVE_INFINITY) {}
  add(source: Readable, chunk: Buffer): void {
    this.size += chunk.length
    bytesRead(chunk.length)
    if (this.size > this.maxBytes) source.destroy(new BlobTooLargeError(this.maxBytes))
  }
}
