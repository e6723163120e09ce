import fs from 'node:fs'
import { createRequire } from 'node:module'
import v8 from 'node:v8'
import vm from 'node:vm'
import { parentPort, workerData } from 'node:worker_threads'
import type SQLite from 'better-sqlite3'

/**
 * The worker thread of csv-half-worker.ts: builds one part of an export's CSV on a read-only
 * connection of its own and writes it straight into its file. Runs as written (no build step
 * between: Node strips the types), so it imports only Node's modules and the SQLite driver.
 */

/** One part of an export's CSV, as csv-half-worker.ts hands it to the thread. */
export interface HalfJob {
  /** The SQLite file. */
  database: string
  /** The file this part is written to (created). */
  out: string
  /** A SELECT of one block: `[count, csv blob]` for the ids after `params[fromIndex]` up to `params[toIndex]`. */
  sql: string
  params: unknown[]
  fromIndex: number
  toIndex: number
  /** The ids of this part: after `from`, up to and including `to`, in blocks of `span`. */
  from: number
  to: number
  span: number
}

/** What the thread answers: the part's record count, or why it failed. */
export type HalfResult = { count: number; error?: undefined } | { error: string; count?: undefined }

// After each block the thread's young heap is collected: the block's buffer lives outside the
// heap, and V8 would otherwise let tens of MiB of them pile up before it looked.
v8.setFlagsFromString('--expose-gc')
const collect = vm.runInNewContext('gc') as (opts: { type: 'minor' }) => void
const Database = createRequire(import.meta.url)('better-sqlite3') as typeof SQLite

function buildHalf(job: HalfJob): number {
  const db = new Database(job.database, { readonly: true, fileMustExist: true })
  db.pragma('busy_timeout = 5000')
  const stmt = db.prepare(job.sql).raw(true)
  const fd = fs.openSync(job.out, 'w')
  let count = 0
  try {
    const params = job.params.slice()
    for (let from = job.from; from < job.to; from += job.span) {
      params[job.fromIndex] = from
      params[job.toIndex] = Math.min(from + job.span, job.to)
      const row = stmt.get(...params) as [number | bigint, Buffer]
      const n = Number(row[0])
      if (n > 0) {
        const csv = row[1]
        for (let at = 0; at < csv.length; ) at += fs.writeSync(fd, csv, at)
        count += n
      }
      collect({ type: 'minor' })
    }
  } finally {
    fs.closeSync(fd)
    db.close()
  }
  return count
}

let result: HalfResult
// Any failure goes back as its message: an error thrown out of the thread loses it on the way.
try {
  result = { count: buildHalf(workerData as HalfJob) }
} catch (err) {
  result = { error: String((err as Error | null)?.message || err) }
}
parentPort!.postMessage(result)
