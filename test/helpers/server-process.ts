import { type ChildProcess, execFile, spawn } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { inject } from 'vitest'
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js'
import type { DialectName } from './server.js'

/**
 * Wharf as `npm start` runs it: the built server as a child process, for tests that kill it with
 * SIGKILL and start it again on the same data.
 */
const run = promisify(execFile)
export const projectRoot = path.resolve(import.meta.dirname, '..', '..')

/** The server built for this run by the global setup (`buildServerForRun`). */
export function builtServer(): string {
  return inject('serverCli')
}

/** A port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo
      srv.close(() => resolve(port))
    })
    srv.on('error', reject)
  })
}

export interface ServerProcess {
  child: ChildProcess
  pid: number
  /** `http://127.0.0.1:<port>/api/rest/v1` */
  api: string
  /** Settles when the process has exited, however it ended. */
  exited: Promise<unknown>
}

export interface ServerProcesses {
  /** Starts `cli.js serve` on a free port with exactly `env` (plus PORT) and waits until it listens. */
  serve(env: NodeJS.ProcessEnv): Promise<ServerProcess>
  /** Runs a CLI command (`['api-keys', 'create', …]`) to its end and returns what it printed. */
  wharf(args: string[], env: NodeJS.ProcessEnv): Promise<{ stdout: string; stderr: string }>
  /** Fails with the step's name and what the servers said instead of hanging to the test's timeout. */
  step<T>(name: string, work: Promise<T>, ms?: number): Promise<T>
  /** SIGKILLs every server still running and waits until each has exited (for afterAll). */
  killAll(): Promise<void>
}

/** What the servers printed, kept to its last part so failure messages stay readable. */
const OUTPUT_KEPT = 20_000

/** Servers of `cli`: by default the one the global setup built for this run. */
export function serverProcesses(cli = builtServer()): ServerProcesses {
  const children: ServerProcess[] = []
  let output = ''
  const note = (d: Buffer | string) => {
    output = (output + d).slice(-OUTPUT_KEPT)
  }

  /**
   * A free port can be taken by another test's process between freePort closing it and the server
   * listening on it: a start that fails with EADDRINUSE tries again on another port.
   */
  async function serve(env: NodeJS.ProcessEnv): Promise<ServerProcess> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await serveOn(await freePort(), env)
      } catch (err) {
        if (attempt >= 3 || !String((err as Error).message).includes('EADDRINUSE')) throw err
      }
    }
  }

  async function serveOn(port: number, env: NodeJS.ProcessEnv): Promise<ServerProcess> {
    // Info level: the server says "Wharf is listening" once it accepts requests and runs its workers.
    const child = spawn(process.execPath, [cli, 'serve'], {
      env: { SFTP_PORT: '0', ...env, PORT: String(port), LOG_LEVEL: 'info' },
      cwd: projectRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const exited = new Promise((resolve) => child.once('exit', resolve))
    const served = { child, pid: child.pid ?? 0, api: `http://127.0.0.1:${port}/api/rest/v1`, exited }
    children.push(served)
    let out = ''
    let late: NodeJS.Timeout | undefined
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d) => {
        note(d)
        if (out.length < OUTPUT_KEPT) out += d
        if (out.includes('Wharf is listening')) resolve()
      })
      child.stderr!.on('data', (d) => {
        note(d)
        if (out.length < OUTPUT_KEPT) out += d
      })
      child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)))
      // A start that never completes fails with what the server said, not as a bare timeout,
      // and the server goes: a caller that tries again on another port must not leave it running.
      late = setTimeout(() => {
        child.kill('SIGKILL')
        reject(new Error(`server did not start: ${out}`))
      }, 20_000)
    }).finally(() => clearTimeout(late))
    return served
  }

  async function step<T>(name: string, work: Promise<T>, ms = 20_000): Promise<T> {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${name} took over ${ms / 1000} s; servers said:\n${output}`)),
        ms,
      )
    })
    try {
      return await Promise.race([work, late])
    } finally {
      clearTimeout(timer)
    }
  }

  return {
    serve,
    step,
    wharf: (args, env) =>
      step(`wharf ${args.join(' ')}`, run(process.execPath, [cli, ...args], { env, cwd: projectRoot })),
    async killAll() {
      const running = children.filter((c) => c.child.exitCode === null && c.child.signalCode === null)
      for (const c of running) c.child.kill('SIGKILL')
      await Promise.all(running.map((c) => c.exited))
    },
  }
}

/** One site's data for server processes: a folder, and on PostgreSQL a schema of its own. */
export interface ProcessSite {
  dataDir: string
  /** The site's database as the test reads it (migrated, so the servers find it ready). */
  db: DatabaseHandle
  /** A site-wide API key, made with the CLI ('' with `{ key: false }`: the site is not created yet). */
  key: string
  /** Environment of a server or CLI run on this site: the site's, then `extra`. */
  env(extra?: Record<string, string>): NodeJS.ProcessEnv
  /** Closes the test's connection and deletes the data (the schema too). */
  remove(): Promise<void>
}

/**
 * A fresh site for `cli.js serve` processes. On PostgreSQL they reach their schema through the
 * search_path in DATABASE_URL, as an operator would set it (pg passes `options` to the server).
 */
export async function processSite(
  servers: ServerProcesses,
  dialect: DialectName,
  env: Record<string, string> = {},
  opts: { key?: boolean } = {},
): Promise<ProcessSite> {
  const pgUrl = process.env['TEST_DATABASE_URL']
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-site-'))
  const schema = dialect === 'postgres' ? `t_${crypto.randomBytes(6).toString('hex')}` : undefined
  if (schema && !pgUrl) throw new Error('PostgreSQL needs TEST_DATABASE_URL')
  // Migrated here, with the schema named: a server given only a search_path runs Kysely's migrator
  // without one, which finds another test schema's migration tables and fails.
  const db = openDatabase({ url: schema ? pgUrl : undefined, dataDir, schema })
  await db.migrate()
  let url: string | undefined
  if (schema) {
    const u = new URL(pgUrl!)
    u.searchParams.set('options', `-c search_path=${schema}`)
    url = u.toString()
  }
  const siteEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
    PATH: process.env['PATH'],
    HOME: process.env['HOME'],
    DATA_DIR: dataDir,
    ADMIN_PASSWORD: 'admin-password-1',
    LOG_LEVEL: 'warn',
    ...(url ? { DATABASE_URL: url } : {}),
    ...env,
    ...extra,
  })
  const made =
    opts.key === false ? null : await servers.wharf(['api-keys', 'create', '--site-wide'], siteEnv())
  return {
    dataDir,
    db,
    key: made ? (JSON.parse(made.stdout).key as string) : '',
    env: siteEnv,
    async remove() {
      await db.close()
      await fs.rm(dataDir, { recursive: true, force: true })
      if (!schema) return
      const c = new pg.Client({ connectionString: pgUrl })
      await c.connect()
      try {
        await c.query(`drop schema if exists ${schema} cascade`)
      } finally {
        await c.end()
      }
    },
  }
}
