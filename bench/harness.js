// Plumbing shared by the benchmarks: child processes that are always killed, a Wharf server from
// dist on its own data folder, throwaway PostgreSQL databases, CPU readings and tables.
import { execFile, execFileSync, spawn } from 'node:child_process'
import crypto from 'node:crypto'
import { createReadStream, createWriteStream, readFileSync } from 'node:fs'
import fs from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import pg from 'pg'

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

export function intSetting(name, fallback, min, max) {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min || n > max) {
    console.error(`${name} must be a whole number from ${min} to ${max}`)
    process.exit(2)
  }
  return n
}

// ---------- child processes: every one is killed at the end, whatever happens ----------

export const children = new Set()
/** Undo steps (temporary folders, the PostgreSQL database), run last-in first-out. */
export const cleanups = []

export function killAll() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
}

export async function runCleanups() {
  while (cleanups.length > 0) {
    const undo = cleanups.pop()
    await undo().catch((err) => console.error(`cleanup: ${err.message}`))
  }
}

process.on('exit', killAll)
/** Kills the children at once, undoes what it can within 5 s, and exits. */
export function abort(code) {
  const alive = [...children].filter((c) => c.exitCode === null && c.signalCode === null)
  const gone = Promise.all(alive.map((c) => new Promise((resolve) => c.once('exit', resolve))))
  killAll()
  const timeout = new Promise((resolve) => setTimeout(resolve, 5000).unref())
  // A child still starting up could recreate a folder being removed: clean up once they are gone.
  Promise.race([gone.then(runCleanups), timeout]).finally(() => process.exit(code))
}
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.once(sig, () => abort(130))

/** A Node child process; with `ipc`, it also has the IPC channel (`child.send`, `process.send`). */
export function startChild(name, args, env, { ipc = false } = {}) {
  // SFTP stays off unless a benchmark asks for it: its fixed port would clash between runs, and
  // the HTTP measurements are of a server doing nothing else.
  return startProgram(name, process.execPath, args, { SFTP_ENABLED: 'false', ...env }, { ipc })
}

/** Any program as a child process, killed at the end like the Node ones; its output is kept. */
export function startProgram(name, file, args, env, { ipc = false } = {}) {
  const stdio = ['ignore', 'pipe', 'pipe', ...(ipc ? ['ipc'] : [])]
  const child = spawn(file, args, { cwd: root, env, stdio })
  children.add(child)
  let log = ''
  const keep = (d) => {
    log = (log + d).slice(-16_000)
  }
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  return { name, child, exited, log: () => log }
}

/** SIGTERM (a graceful stop, which also lets --cpu-prof write its file), then SIGKILL. */
export async function stopChild(proc, graceMs = 10_000) {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return
  proc.child.kill('SIGTERM')
  const timer = new Promise((resolve) => setTimeout(resolve, graceMs, 'timeout'))
  if ((await Promise.race([proc.exited, timer])) === 'timeout') {
    proc.child.kill('SIGKILL')
    await proc.exited
  }
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

/** Polls until the process answers HTTP at all (any status), or fails with its output. */
export async function waitReady(proc, url, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
      throw new Error(`${proc.name} exited before it was ready:\n${proc.log()}`)
    }
    try {
      await fetch(url, { signal: AbortSignal.timeout(1000) })
      return
    } catch {
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  throw new Error(`${proc.name} did not answer within ${timeoutMs / 1000} s:\n${proc.log()}`)
}

// ---------- the servers ----------

export async function json(res, what) {
  const text = await res.text()
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${text}`)
  return text === '' ? null : JSON.parse(text)
}

/** What `npm start` runs after `node` (its V8 flags included), so benchmarks measure that. */
function startArgs() {
  const start = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start
  const [node, ...args] = start.split(/\s+/)
  if (node !== 'node') throw new Error(`package.json's start script must begin with node: ${start}`)
  return args
}

let profiles
/** The folder of CPU profiles, if any were written. */
export const profilesUsed = () => profiles
export const PROFILE = process.env['BENCH_PROFILE'] === '1' || process.env['BENCH_PROFILE'] === 'alloc'
export async function profileDir() {
  profiles ??= await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-bench-profiles-'))
  return profiles
}

/**
 * Wharf from dist, with its own data folder, limits far above the load, and an API key made by
 * the bootstrap admin with `keyBody` (the body of POST /api_keys).
 */
export async function startWharf(label, databaseUrl, extraEnv = {}, keyBody = { name: 'benchmark' }) {
  const port = await freePort()
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-bench-'))
  cleanups.push(() => fs.rm(dataDir, { recursive: true, force: true }))
  const adminPassword = crypto.randomBytes(12).toString('hex')
  const env = { ...process.env }
  for (const k of ['DATABASE_URL', 'BASE_URL', 'TRUST_PROXY']) delete env[k]
  Object.assign(env, {
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    ADMIN_USERNAME: 'admin',
    ADMIN_PASSWORD: adminPassword,
    RATE_LIMIT_PER_SECOND: '1000000',
    RATE_LIMIT_BURST: '10000000',
    RATE_LIMIT_CONCURRENT: '100000',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...extraEnv,
  })
  const profileArgs = !PROFILE
    ? []
    : process.env['BENCH_PROFILE'] === 'alloc'
      ? ['--require', path.join(root, 'bench/alloc-profile.cjs')]
      : ['--cpu-prof', `--cpu-prof-dir=${await profileDir()}`]
  if (process.env['BENCH_PROFILE'] === 'alloc') env['BENCH_PROFILE_DIR'] = await profileDir()
  const args = [...profileArgs, ...startArgs()]
  const proc = startChild(label, args, env)
  const base = `http://127.0.0.1:${port}`
  const api = `${base}/api/rest/v1`
  try {
    await waitReady(proc, `${api}/api_key`)
    // The bootstrap admin logs in and makes a key for itself, as a user of the API would.
    const session = await json(
      await fetch(`${api}/sessions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password: adminPassword }),
      }),
      `${label}: POST /sessions`,
    )
    const created = await json(
      await fetch(`${api}/api_keys`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-ServiceAPI-Auth': session.id },
        body: JSON.stringify(keyBody),
      }),
      `${label}: POST /api_keys`,
    )
    await fetch(`${api}/sessions`, { method: 'DELETE', headers: { 'X-ServiceAPI-Auth': session.id } })
    const headers = { 'X-ServiceAPI-Key': created.key }
    // The first use stamps last_use_at; the body from then on is the steady-state one.
    await json(await fetch(`${api}/api_key`, { headers }), `${label}: GET /api_key`)
    const body = await (await fetch(`${api}/api_key`, { headers })).text()
    return { label, proc, base, api, dataDir, url: `${api}/api_key`, headers, body, args, env }
  } catch (err) {
    await stopChild(proc)
    throw err
  }
}

/**
 * Starts a stopped Wharf from `startWharf` again, same command, environment, data and key (for
 * work done to its database while it was down); `w.proc` becomes the new process.
 */
export async function restartWharf(w) {
  if (w.proc.child.exitCode === null && w.proc.child.signalCode === null)
    throw new Error(`${w.label} is still running`)
  w.proc = startChild(w.label, w.args, w.env)
  await waitReady(w.proc, w.url)
  return w
}

/**
 * A PostgreSQL database of its own (the role needs CREATEDB), so the run starts empty, the first
 * start creates the admin, and nothing is left behind.
 */
export async function createPgDatabase(url) {
  const name = `wharf_bench_${crypto.randomBytes(4).toString('hex')}`
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    await c.query(`create database ${name}`)
  } finally {
    await c.end()
  }
  const u = new URL(url)
  u.pathname = `/${name}`
  return { name, url: u.toString() }
}

export async function dropPgDatabase(url, name) {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    await c.query(`drop database if exists ${name} with (force)`)
  } finally {
    await c.end()
  }
}

// ---------- measuring ----------

/** A file of `mb` mebibytes of random bytes (a 64 MiB random block repeated), and its md5. */
export async function makeRandomFile(dir, mb) {
  const file = path.join(dir, 'source.bin')
  const block = crypto.randomBytes(Math.min(mb, 64) * 1024 * 1024)
  const md5 = crypto.createHash('md5')
  const out = createWriteStream(file)
  let left = mb * 1024 * 1024
  while (left > 0) {
    const chunk = left >= block.length ? block : block.subarray(0, left)
    md5.update(chunk)
    if (!out.write(chunk)) await new Promise((r) => out.once('drain', r))
    left -= chunk.length
  }
  await new Promise((r, j) => out.end((e) => (e ? j(e) : r())))
  return { file, md5: md5.digest('hex'), size: mb * 1024 * 1024 }
}

/** The md5 of a file, in hex. */
export async function md5File(file) {
  const md5 = crypto.createHash('md5')
  await pipeline(createReadStream(file, { highWaterMark: 1024 * 1024 }), md5)
  return md5.digest('hex')
}

/** Peak and current resident memory of a process (Linux), in MiB. */
export async function memory(pid) {
  try {
    const status = await fs.readFile(`/proc/${pid}/status`, 'utf8')
    const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? Number.NaN)
    return { peak: kb('VmHWM') / 1024, now: kb('VmRSS') / 1024 }
  } catch {
    return { peak: Number.NaN, now: Number.NaN }
  }
}

/**
 * The most resident memory of a process in each phase of a run, sampled every `everyMs`:
 * `phase(name)` starts the next one, `stop()` ends the last and returns the maximum of each
 * (MiB), in order. VmHWM holds the whole life's peak (start-up and the benchmark's own password
 * login included): this tells what each stretch of work, a transfer's parts say, reached.
 */
export function phasedRss(pid, everyMs = 20) {
  const max = new Map()
  let current = null
  const note = (now) => {
    if (current !== null && now > (max.get(current) ?? 0)) max.set(current, now)
  }
  const timer = setInterval(async () => note((await memory(pid)).now), everyMs)
  return {
    async phase(name) {
      const { now } = await memory(pid)
      note(now)
      current = name
      max.set(name, Math.max(max.get(name) ?? 0, now))
    },
    async stop() {
      clearInterval(timer)
      note((await memory(pid)).now)
      current = null
      return max
    },
  }
}

export const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
})()

/**
 * CPU seconds from a process's /proc/<pid>/stat (Linux), or null elsewhere: its own (`self`:
 * utime + stime) or that of its children it waited for (cutime + cstime).
 */
async function statCpu(pid, whose) {
  try {
    const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const at = whose === 'self' ? 11 : 13
    return (Number(fields[at]) + Number(fields[at + 1])) / CLOCK_TICKS
  } catch {
    return null
  }
}

/** CPU seconds a process has used so far (Linux /proc), or null elsewhere. */
export function cpuSeconds(pid) {
  return statCpu(pid, 'self')
}

export const fmt = (n, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })

export function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)))
  return rows
    .map((r, ri) => {
      const line = r
        .map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i])))
        .join('  ')
      return ri === 0 ? `${line}\n${widths.map((w) => '-'.repeat(w)).join('  ')}` : line
    })
    .join('\n')
}

/** Runs a program to its end; rejects with its output if it fails. */
export function runProgram(file, args, { timeoutMs = 60_000 } = {}) {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${file} ${args.join(' ')}: ${err.message}\n${stderr}`))
      else resolve({ stdout, stderr })
    })
  })
}

/**
 * Resolves once the port of 127.0.0.1 greets a connection with a line starting with `greeting`
 * (a protocol's banner); fails with the server's output if `proc` exits first, or after the time.
 */
export async function waitForGreeting(port, proc, greeting, protocol, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (proc && (proc.child.exitCode !== null || proc.child.signalCode !== null))
      throw new Error(`${proc.name} exited before it was ready:\n${proc.log()}`)
    const first = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1')
      const done = (v) => {
        s.destroy()
        resolve(v)
      }
      s.setTimeout(1000, () => done(''))
      s.once('data', (d) => done(String(d)))
      s.once('error', () => done(''))
    })
    if (first.startsWith(greeting)) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`nothing answered ${protocol} on port ${port} within ${timeoutMs / 1000} s`)
}

/**
 * CPU seconds of a process's children that have ended and been waited for (Linux /proc): for a
 * server that forks per session (sshd, vsftpd), the sessions' processes, once they are gone.
 */
export async function endedChildrenCpu(pid) {
  // The client has exited; the server's side ends just after: wait until it has none left.
  for (let i = 0; i < 50; i++) {
    const kids = await fs.readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '')
    if (kids.trim() === '') break
    await new Promise((r) => setTimeout(r, 20))
  }
  return statCpu(pid, 'children')
}

/** Fails unless the file's md5 is the source's. */
export async function checkMd5(file, src, what) {
  const md5 = await md5File(file)
  if (md5 !== src.md5) throw new Error(`${what}: md5 ${md5}, expected ${src.md5}`)
}
