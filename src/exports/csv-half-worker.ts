import { Worker } from 'node:worker_threads'
import type { HalfJob, HalfResult } from './csv-half-thread.js'

export type { HalfJob }

// The thread's module beside this one: compiled JavaScript in a build, TypeScript when Wharf runs
// from its sources (tests), which Node loads by stripping the types.
const THREAD = new URL(
  import.meta.url.endsWith('.ts') ? './csv-half-thread.ts' : './csv-half-thread.js',
  import.meta.url,
)
const THREAD_ARGV = import.meta.url.endsWith('.ts') ? ['--experimental-strip-types'] : []

/**
 * Builds one part of an export's CSV in a worker thread, on a read-only connection of its own to
 * the SQLite file (WAL: committed data only), and writes it straight into its own file: no record
 * crosses between threads, only the count at the end. The main thread meanwhile builds the other
 * part on its connection, so the two parts take two cores.
 *
 * Runs a HalfJob in a new worker thread; resolves to its record count. Abort stops the thread. */
export function buildHalfInWorker(job: HalfJob, signal: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(THREAD, {
      workerData: job,
      execArgv: THREAD_ARGV,
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
    if (signal.aborted) onAbort()
    worker.once('message', (m: HalfResult) =>
      m.error !== undefined
        ? finish(new Error(`The export's worker thread failed: ${m.error}`))
        : finish(null, m.count),
    )
    worker.once('error', (err) => finish(err))
    worker.once('exit', (code) => finish(new Error(`the export's worker thread stopped (exit code ${code})`)))
  })
}
