import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'

/**
 * Builds one part of an export's CSV in a worker thread, on a read-only connection of its own to
 * the SQLite file (WAL: committed data only), and writes it straight into its own file: no record
 * crosses between threads, only the count at the end. The main thread meanwhile builds the other
 * part on its connection, so the two parts take two cores.
 */
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

// Evaluated as a CommonJS script in the worker: better-sqlite3 by the path the server resolved.
// After each block the worker's young heap is collected: the block's buffer lives outside the
// heap, and V8 would otherwise let tens of MiB of them pile up before it looked.
const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const fs = require('node:fs')
require('node:v8').setFlagsFromString('--expose-gc')
const collect = require('node:vm').runInNewContext('gc')
const Database = require(workerData.module)
const job = workerData.job
// Any failure goes back as its message: an error thrown out of the thread loses it on the way.
try {
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
      const row = stmt.get(...params)
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
  parentPort.postMessage({ count })
} catch (err) {
  parentPort.postMessage({ error: String((err && err.message) || err) })
}
`

const betterSqlite = createRequire(import.meta.url).resolve('better-sqlite3')

/** Runs a HalfJob in a new worker thread; resolves to its record count. Abort stops the thread. */
export function buildHalfInWorker(job: HalfJob, signal: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(SOURCE, {
      eval: true,
      workerData: { job, module: betterSqlite },
      resourceLimits: { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 64 },
    })
    let settled = false
    const finish = (err: Error | null, count?: number) => {
      if (settled) return
      settled = true
      signal.removeEventListener('abort', onAbort)
      if (err) reject(err)
      else resolve(count!)
    }
    const onAbort = () => {
      void worker.terminate()
      finish(signal.reason instanceof Error ? signal.reason : new Error('aborted'))
    }
    signal.addEventListener('abort', onAbort, { once: true })
    worker.once('message', (m: { count?: number; error?: string }) =>
      m.error !== undefined
        ? finish(new Error(`The export's worker thread failed: ${m.error}`))
        : finish(null, m.count),
    )
    worker.once('error', (err) => finish(err))
    worker.once('exit', (code) => finish(new Error(`the export's worker thread stopped (exit code ${code})`)))
  })
}
