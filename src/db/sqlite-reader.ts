import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'

/**
 * A second, read-only connection to the SQLite file, in a thread of its own: a large read (an
 * export) can run part of its work there while the main connection does the rest, on another
 * core. It sees only committed data (WAL), never another caller's open transaction.
 */
export interface SqliteReader {
  /** Runs a compiled SELECT on the reader's connection; rows as arrays, as `queryArrays` gives them. */
  queryArrays(sql: string, params: readonly unknown[]): Promise<unknown[][]>
  close(): Promise<void>
}

// Evaluated as a CommonJS script in the worker: better-sqlite3 by the path the server resolved.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.module)
const db = new Database(workerData.file, { readonly: true, fileMustExist: true })
db.pragma('busy_timeout = 5000')
const statements = new Map()
parentPort.on('message', ({ id, sql, params }) => {
  try {
    let stmt = statements.get(sql)
    if (stmt === undefined) {
      stmt = db.prepare(sql).raw(true)
      statements.set(sql, stmt)
    }
    const rows = stmt.all(...params)
    // Large values move to the main thread instead of being copied (and left here for the GC).
    const transfer = []
    for (const row of rows) {
      for (const v of row) {
        if (v instanceof Uint8Array && v.byteLength > 65536 && v.byteLength === v.buffer.byteLength) {
          transfer.push(v.buffer)
        }
      }
    }
    parentPort.postMessage({ id, rows }, transfer)
  } catch (err) {
    parentPort.postMessage({ id, error: String((err && err.message) || err) })
  }
})
`

const betterSqlite = createRequire(import.meta.url).resolve('better-sqlite3')

export async function openSqliteReader(file: string): Promise<SqliteReader> {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { file, module: betterSqlite },
    // It holds a page of rows at a time: a small heap keeps the server's memory where it was.
    resourceLimits: { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 64 },
  })
  const waiting = new Map<number, { resolve(rows: unknown[][]): void; reject(err: Error): void }>()
  let next = 0
  let failed: Error | null = null
  const failAll = (err: Error) => {
    failed = err
    for (const w of waiting.values()) w.reject(err)
    waiting.clear()
  }
  worker.on('message', (m: { id: number; rows?: unknown[][]; error?: string }) => {
    const w = waiting.get(m.id)
    if (!w) return
    waiting.delete(m.id)
    if (m.error !== undefined) w.reject(new Error(`SQLite reader: ${m.error}`))
    else w.resolve(m.rows!)
  })
  worker.on('error', failAll)
  worker.on('exit', (code) => failAll(new Error(`SQLite reader stopped (exit code ${code})`)))
  await new Promise<void>((resolve, reject) => {
    worker.once('online', resolve)
    worker.once('error', reject)
  })
  return {
    queryArrays(sql, params) {
      if (failed) return Promise.reject(failed)
      const id = next++
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject })
        worker.postMessage({ id, sql, params })
      })
    },
    async close() {
      worker.removeAllListeners('exit')
      await worker.terminate()
    },
  }
}
