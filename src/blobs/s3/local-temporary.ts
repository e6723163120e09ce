import fsp from 'node:fs/promises'
import path from 'node:path'
import { newestWrite } from '../disk/durable-files.js'

/**
 * Deletes what a crash left in a local folder of files being written: each entry (a file, or a
 * folder of files) whose newest write is older than `cutoff` (epoch ms, wall clock).
 */
export async function sweepFolder(dir: string, cutoff: number): Promise<number> {
  const names = await fsp.readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return []
    throw err
  })
  let removed = 0
  for (const name of names) {
    const entry = path.join(dir, name)
    const st = await fsp.stat(entry).catch(() => null)
    if (st && (await newestWrite(entry, st)) < cutoff) {
      await fsp.rm(entry, { recursive: true, force: true })
      removed++
    }
  }
  return removed
}
