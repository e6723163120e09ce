import fsp from 'node:fs/promises'
import type { Digest } from '../digest.js'

/**
 * Bytes read per call. Hashing reads into one buffer, reused: md5 and CRC-32 take the bytes
 * before the next read, and a gigabyte blob does not leave a gigabyte of 1 MiB buffers for the
 * garbage collector (they raised the server's resident memory by tens of MiB).
 */
const READ_BYTES = 1024 * 1024

/** Feeds a whole open file, from its start to its end, to a digest. */
async function hashHandle(
  digest: Digest,
  handle: fsp.FileHandle,
  buffer: Buffer,
  signal: AbortSignal | undefined,
): Promise<void> {
  for (let position = 0; ; ) {
    signal?.throwIfAborted()
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, position)
    if (bytesRead === 0) return
    digest.add(buffer.subarray(0, bytesRead))
    position += bytesRead
  }
}

/** Feeds whole files to a digest, one after another; stops at a read once `signal` is aborted. */
export async function hashFiles(digest: Digest, files: string[], signal?: AbortSignal): Promise<void> {
  const buffer = files.length > 0 ? Buffer.allocUnsafe(READ_BYTES) : Buffer.alloc(0)
  for (const file of files) {
    const handle = await fsp.open(file, 'r')
    try {
      await hashHandle(digest, handle, buffer, signal)
    } finally {
      await handle.close()
    }
  }
}
