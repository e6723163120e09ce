import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { StagedPartError } from '../blob-store.js'

async function syncFile(file: string): Promise<void> {
  const handle = await fsp.open(file, 'r+')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/** Flushes a folder's entries (a rename or a new file in it) to disk. */
export async function syncDir(dir: string): Promise<void> {
  let handle: fsp.FileHandle
  try {
    handle = await fsp.open(dir, 'r')
  } catch (err) {
    // Windows cannot open a folder as a file; its file system orders metadata writes itself.
    if (['EISDIR', 'EPERM', 'EACCES'].includes((err as NodeJS.ErrnoException).code ?? '')) return
    throw err
  }
  try {
    await handle.sync()
  } catch (err) {
    if (!['EINVAL', 'EPERM', 'EBADF'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err
  } finally {
    await handle.close()
  }
}

/** mkdir -p, then flushes the parent of each folder it created so the new folders survive a crash. */
export async function mkdirDurable(dir: string): Promise<void> {
  const first = await fsp.mkdir(dir, { recursive: true })
  if (first === undefined) return
  for (let d = dir; ; d = path.dirname(d)) {
    await syncDir(path.dirname(d))
    if (d === first || path.dirname(d) === d) break
  }
}

/**
 * A hard link (no bytes copied); a flushed copy where the file system has no hard links. Safe
 * because nothing ever writes into a staged part or a blob after it is in place.
 */
export async function linkOrCopy(from: string, to: string): Promise<void> {
  try {
    await fsp.link(from, to)
  } catch (err) {
    if (
      !['EPERM', 'EXDEV', 'ENOTSUP', 'EOPNOTSUPP', 'EMLINK'].includes(
        (err as NodeJS.ErrnoException).code ?? '',
      )
    )
      throw err
    await fsp.copyFile(from, to, fs.constants.COPYFILE_FICLONE | fs.constants.COPYFILE_EXCL)
    await syncFile(to)
  }
}

/**
 * Flushes files to disk, a few at a time; with `expected`, first checks each has the size its
 * part had when it was stored (a part cut short by a crash must be sent again).
 */
export async function flushAll(files: string[], expected?: { size: number; part: number; ref: string }[]) {
  let next = 0
  const worker = async () => {
    while (next < files.length) {
      const i = next++
      const handle = await fsp.open(files[i]!, 'r+')
      try {
        const want = expected?.[i]
        if (want && (await handle.stat()).size !== want.size) {
          throw new StagedPartError(want.ref, want.part, `is not the ${want.size} bytes that were sent`)
        }
        await handle.sync()
      } finally {
        await handle.close()
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(8, files.length) }, worker))
}

/** When a file, or a folder and the files in it, was last written. */
export async function newestWrite(file: string, st: fs.Stats): Promise<number> {
  if (!st.isDirectory()) return st.mtimeMs
  let newest = st.mtimeMs
  for (const name of await fsp.readdir(file).catch(() => [])) {
    const inner = await fsp.stat(path.join(file, name)).catch(() => null)
    if (inner) newest = Math.max(newest, inner.mtimeMs)
  }
  return newest
}
