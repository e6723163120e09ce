import fsp from 'node:fs/promises'
import path from 'node:path'
import { Digest } from '../digest.js'

/** What was hashed of one part: enough to tell whether the same bytes are still there. */
interface Hashed {
  ino: number
  size: number
  mtimeMs: number
}

interface State {
  digest: Digest
  hashed: Hashed[]
  running: Promise<void> | null
}

/**
 * Hashes an upload's parts while the rest of it is still arriving: each part that completes a
 * run from part 1 is read (from the page cache, usually) and fed to the upload's md5 and CRC-32,
 * so that finishing the upload has little left to hash. Parts arrive in any order and on any
 * process; what this process hashed is trusted at the end only if every hashed part is still the
 * same file (inode, size, modification time), otherwise the end hashes everything again.
 */
export class PartHasher {
  private readonly states = new Map<string, State>()

  /** At most this many uploads are hashed ahead at once; others are hashed at the end. */
  constructor(private readonly maxUploads = 256) {}

  /** A part of `ref` is staged in `dir`: hash ahead, in the background, as far as parts allow. */
  staged(ref: string, dir: string): void {
    let st = this.states.get(ref)
    if (!st) {
      if (this.states.size >= this.maxUploads) return
      st = { digest: new Digest(), hashed: [], running: null }
      this.states.set(ref, st)
    }
    if (st.running) return
    const state = st
    state.running = this.advance(state, dir)
      .catch(() => {
        // A failed read only means the end hashes more itself.
        this.states.delete(ref)
      })
      .finally(() => {
        state.running = null
      })
  }

  private async advance(st: State, dir: string): Promise<void> {
    let buffer: Buffer | undefined
    for (;;) {
      const file = path.join(dir, String(st.hashed.length + 1))
      const handle = await fsp.open(file, 'r').catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return null
        throw err
      })
      if (!handle) return
      try {
        const stat = await handle.stat()
        buffer ??= Buffer.allocUnsafe(READ_BYTES)
        await hashHandle(st.digest, handle, buffer)
        st.hashed.push({ ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs })
      } finally {
        await handle.close()
      }
    }
  }

  /**
   * The digest of the first parts, if still valid for the files at `files` (the parts as the
   * blob will hold them, in order), and how many parts it covers; forgets the upload.
   */
  async take(ref: string, files: string[]): Promise<{ digest: Digest; sizes: number[] } | null> {
    const st = this.states.get(ref)
    this.states.delete(ref)
    if (!st) return null
    await st.running
    if (st.hashed.length > files.length) return null
    for (const [i, h] of st.hashed.entries()) {
      const now = await fsp.stat(files[i]!).catch(() => null)
      if (!now || now.ino !== h.ino || now.size !== h.size || now.mtimeMs !== h.mtimeMs) return null
    }
    return { digest: st.digest, sizes: st.hashed.map((h) => h.size) }
  }

  forget(ref: string): void {
    this.states.delete(ref)
  }
}

/**
 * Bytes read per call. Hashing reads into one buffer, reused: md5 and CRC-32 take the bytes
 * before the next read, and a gigabyte upload no longer leaves a gigabyte of 1 MiB buffers for
 * the garbage collector (they raised the server's resident memory by tens of MiB).
 */
const READ_BYTES = 1024 * 1024

/** Feeds a whole open file, from its start to its end, to a digest. */
async function hashHandle(digest: Digest, handle: fsp.FileHandle, buffer: Buffer): Promise<void> {
  for (let position = 0; ; ) {
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, position)
    if (bytesRead === 0) return
    digest.add(buffer.subarray(0, bytesRead))
    position += bytesRead
  }
}

/** Feeds whole files to a digest, returning each one's size. */
export async function hashFiles(digest: Digest, files: string[]): Promise<number[]> {
  const sizes: number[] = []
  const buffer = files.length > 0 ? Buffer.allocUnsafe(READ_BYTES) : Buffer.alloc(0)
  for (const file of files) {
    const before = digest.size
    const handle = await fsp.open(file, 'r')
    try {
      await hashHandle(digest, handle, buffer)
    } finally {
      await handle.close()
    }
    sizes.push(digest.size - before)
  }
  return sizes
}
