import { execFile } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
const projectRoot = path.resolve(import.meta.dirname, '..', '..')
const CACHE = path.join(projectRoot, 'node_modules', '.cache')
/** The incremental build every run refreshes; under node_modules, so it resolves dependencies as dist/ does. */
const SHARED_BUILD = path.join(CACHE, 'wharf-server')
const LOCK = path.join(CACHE, 'wharf-server.lock')
const RUN_PREFIX = 'wharf-server-run-'

/**
 * Builds src/ once for a test run (from the global setup, which has no time limit) and returns the
 * path of its cli.js. tsc builds incrementally into one folder, under a lock, since two runs in one
 * checkout would otherwise rewrite the same outputs in place (truncate, then write); the run then
 * gets a copy of its own, so a later run's build never hands half a module to this run's servers.
 * A cold build takes over 10 s of CPU: built once per run, not once per test file, it never eats
 * into a test's time limit on a loaded machine.
 */
export async function buildServerForRun(): Promise<{ cli: string; remove: () => Promise<void> }> {
  await fs.mkdir(CACHE, { recursive: true })
  await removeAbandonedRuns()
  const runDir = path.join(CACHE, `${RUN_PREFIX}${process.pid}-${crypto.randomBytes(4).toString('hex')}`)
  await withLock(async () => {
    const tsc = path.join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc')
    const args = ['-p', 'tsconfig.build.json', '--outDir', SHARED_BUILD, '--incremental']
    args.push('--tsBuildInfoFile', path.join(SHARED_BUILD, '.tsbuildinfo'))
    // A type error elsewhere is the type check's business: tsc still emits, and the tests run.
    // What it said is kept for when it emitted nothing at all.
    const failed = await run(process.execPath, [tsc, ...args], { cwd: projectRoot }).then(
      () => null,
      (err: { stdout?: string; message: string }) => err.stdout || err.message,
    )
    await fs.cp(SHARED_BUILD, runDir, { recursive: true })
    await fs.access(path.join(runDir, 'cli.js')).catch(() => {
      throw new Error(`tsc built no server into ${SHARED_BUILD}: ${failed ?? 'no output'}`)
    })
  })
  return { cli: path.join(runDir, 'cli.js'), remove: () => fs.rm(runDir, { recursive: true, force: true }) }
}

async function withLock(work: () => Promise<void>): Promise<void> {
  for (;;) {
    try {
      await fs.mkdir(LOCK)
      break
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      // A lock older than any build is one a killed run left behind.
      const since = await fs.stat(LOCK).then(
        (st) => Date.now() - st.mtimeMs,
        () => 0,
      )
      if (since > 10 * 60_000) await fs.rm(LOCK, { recursive: true, force: true })
      else await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
  try {
    await work()
  } finally {
    await fs.rm(LOCK, { recursive: true, force: true })
  }
}

/** Removes the copies of runs whose process has gone (killed before its teardown). */
async function removeAbandonedRuns(): Promise<void> {
  for (const name of await fs.readdir(CACHE)) {
    if (!name.startsWith(RUN_PREFIX)) continue
    const pid = Number(name.slice(RUN_PREFIX.length).split('-')[0])
    if (pid > 0 && isAlive(pid)) continue
    await fs.rm(path.join(CACHE, name), { recursive: true, force: true })
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
