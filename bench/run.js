// `npm run bench`: the cost of Wharf's request path (API key authentication, request limits,
// permission check, the key and its owner read from the database, serialization) measured against
// bare Fastify serving the same JSON body. Both run in their own processes on 127.0.0.1;
// autocannon drives the load.
//
// Settings (environment): BENCH_CONNECTIONS (64), BENCH_DURATION seconds measured per run (15),
// BENCH_WARMUP seconds per target (3), BENCH_DATABASE_URL (adds a PostgreSQL row, in a database
// created and dropped by this run), BENCH_PROFILE=1 (writes a CPU profile of each Wharf process
// to a temporary folder, printed at the end). See docs/performance.md.
import { execFileSync, spawn } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import pg from 'pg'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

function intSetting(name, fallback, min, max) {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min || n > max) {
    console.error(`${name} must be a whole number from ${min} to ${max}`)
    process.exit(2)
  }
  return n
}

const CONNECTIONS = intSetting('BENCH_CONNECTIONS', 64, 1, 1024)
const DURATION = intSetting('BENCH_DURATION', 15, 1, 600)
const WARMUP = intSetting('BENCH_WARMUP', 3, 0, 60)
const ROUNDS = 2
const PG_URL = process.env['BENCH_DATABASE_URL'] || undefined
const PROFILE = process.env['BENCH_PROFILE'] === '1'
const TARGET_RATIO = 0.5
const TARGET_P99_MS = 20

// ---------- child processes: every one is killed at the end, whatever happens ----------

const children = new Set()
/** Undo steps (temporary folders, the PostgreSQL database), run last-in first-out. */
const cleanups = []

function killAll() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
}

async function runCleanups() {
  while (cleanups.length > 0) {
    const undo = cleanups.pop()
    await undo().catch((err) => console.error(`cleanup: ${err.message}`))
  }
}

process.on('exit', killAll)
/** Kills the children at once, undoes what it can within 5 s, and exits. */
function abort(code) {
  killAll()
  const timeout = new Promise((resolve) => setTimeout(resolve, 5000).unref())
  Promise.race([runCleanups(), timeout]).finally(() => process.exit(code))
}
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.once(sig, () => abort(130))

function startChild(name, args, env) {
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] })
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
async function stopChild(proc, graceMs = 10_000) {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return
  proc.child.kill('SIGTERM')
  const timer = new Promise((resolve) => setTimeout(resolve, graceMs, 'timeout'))
  if ((await Promise.race([proc.exited, timer])) === 'timeout') {
    proc.child.kill('SIGKILL')
    await proc.exited
  }
}

async function freePort() {
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
async function waitReady(proc, url, timeoutMs = 30_000) {
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

async function json(res, what) {
  const text = await res.text()
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${text}`)
  return text === '' ? null : JSON.parse(text)
}

let profiles
async function profileDir() {
  profiles ??= await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-bench-profiles-'))
  return profiles
}

/** Wharf from dist, with its own data folder, limits far above the load, and an API key. */
async function startWharf(label, databaseUrl) {
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
  })
  const profileArgs = PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${await profileDir()}`] : []
  const proc = startChild(label, [...profileArgs, 'dist/cli.js', 'serve'], env)
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
        body: JSON.stringify({ name: 'benchmark' }),
      }),
      `${label}: POST /api_keys`,
    )
    await fetch(`${api}/sessions`, { method: 'DELETE', headers: { 'X-ServiceAPI-Auth': session.id } })
    const headers = { 'X-ServiceAPI-Key': created.key }
    // The first use stamps last_use_at; the body from then on is the steady-state one.
    await json(await fetch(`${api}/api_key`, { headers }), `${label}: GET /api_key`)
    const body = await (await fetch(`${api}/api_key`, { headers })).text()
    return { label, proc, url: `${api}/api_key`, headers, body }
  } catch (err) {
    await stopChild(proc)
    throw err
  }
}

async function startBare(body) {
  const port = await freePort()
  const proc = startChild('bare Fastify', ['bench/bare-server.js'], {
    PATH: process.env['PATH'] ?? '',
    PORT: String(port),
    BARE_BODY: body,
  })
  const url = `http://127.0.0.1:${port}/api/rest/v1/api_key`
  await waitReady(proc, url)
  return {
    label: 'bare Fastify (no auth, no DB)',
    proc,
    url,
    headers: {},
    body: await (await fetch(url)).text(),
  }
}

/**
 * A PostgreSQL database of its own (the role needs CREATEDB), so the run starts empty, the first
 * start creates the admin, and nothing is left behind.
 */
async function createPgDatabase(url) {
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

async function dropPgDatabase(url, name) {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    await c.query(`drop database if exists ${name} with (force)`)
  } finally {
    await c.end()
  }
}

// ---------- measuring ----------

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
})()

/** CPU seconds a process has used so far (Linux /proc), or null elsewhere. */
async function cpuSeconds(pid) {
  try {
    const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
  } catch {
    return null
  }
}

async function cannon(target, duration) {
  const cpu0 = await cpuSeconds(target.proc.child.pid)
  const r = await autocannon({ url: target.url, headers: target.headers, connections: CONNECTIONS, duration })
  const cpu1 = await cpuSeconds(target.proc.child.pid)
  return {
    rps: r.requests.average,
    total: r.requests.total,
    p50: r.latency.p50,
    p99: r.latency.p99,
    bad: r.non2xx + r.errors + r.timeouts,
    // Server CPU per request: unlike req/s, barely moved by other load on the machine.
    cpuUs:
      cpu0 !== null && cpu1 !== null && r.requests.total > 0
        ? ((cpu1 - cpu0) * 1e6) / r.requests.total
        : null,
  }
}

const fmt = (n, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })

function table(rows) {
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

async function main() {
  try {
    await fs.access(path.join(root, 'dist', 'cli.js'))
  } catch {
    throw new Error('dist/cli.js is missing: run `npm run build` first (npm run bench does)')
  }
  const started = new Date()
  const wharfs = []
  let bare
  try {
    wharfs.push(await startWharf('Wharf GET /api_key, SQLite'))
    if (PG_URL) {
      const d = await createPgDatabase(PG_URL)
      cleanups.push(() => dropPgDatabase(PG_URL, d.name))
      wharfs.push(await startWharf('Wharf GET /api_key, PostgreSQL', d.url))
    }
    bare = await startBare(wharfs[0].body)
    if (bare.body !== wharfs[0].body)
      throw new Error(`the bare server's body differs from Wharf's:\n${bare.body}\n${wharfs[0].body}`)

    const targets = [...wharfs, bare]
    console.log(
      `Wharf benchmark: ${CONNECTIONS} connections, ${WARMUP} s warm-up per target, ${ROUNDS} runs of ${DURATION} s per target (order alternating)`,
    )
    console.log(
      `Node ${process.version}, ${os.cpus().length} CPU(s): ${os.cpus()[0]?.model ?? 'unknown'}; ${started.toISOString()}`,
    )
    console.log(`Response body: ${Buffer.byteLength(bare.body)} bytes of JSON\n`)

    for (const t of targets) {
      if (WARMUP > 0) await cannon(t, WARMUP)
      t.runs = []
    }
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? targets : [...targets].reverse()
      for (const t of order) {
        const r = await cannon(t, DURATION)
        t.runs.push(r)
        console.log(
          `  run ${round + 1}  ${t.label.padEnd(34)} ${fmt(r.rps).padStart(8)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms` +
            (r.cpuUs !== null ? `  server CPU ${fmt(r.cpuUs)} µs/req` : '') +
            (r.bad ? `  (${r.bad} failed!)` : ''),
        )
      }
    }

    const summary = (t) => ({
      rps: t.runs.reduce((a, r) => a + r.rps, 0) / t.runs.length,
      p50: Math.max(...t.runs.map((r) => r.p50)),
      p99: Math.max(...t.runs.map((r) => r.p99)),
      bad: t.runs.reduce((a, r) => a + r.bad, 0),
      cpuUs: t.runs.every((r) => r.cpuUs !== null)
        ? t.runs.reduce((a, r) => a + r.cpuUs, 0) / t.runs.length
        : null,
    })
    const base = summary(bare)
    const rows = [
      [
        'target',
        'req/s (mean)',
        'p50 ms (worst)',
        'p99 ms (worst)',
        'vs bare',
        'CPU µs/req',
        'failed',
        'targets',
      ],
    ]
    let allOk = true
    for (const t of targets) {
      const s = summary(t)
      const ratio = s.rps / base.rps
      let verdict = ''
      if (t !== bare) {
        const ok = ratio >= TARGET_RATIO && s.p99 < TARGET_P99_MS && s.bad === 0
        allOk &&= ok
        verdict = ok ? 'met' : 'MISSED'
      }
      const cpu = s.cpuUs === null ? 'n/a' : fmt(s.cpuUs)
      rows.push([
        t.label,
        fmt(s.rps),
        fmt(s.p50),
        fmt(s.p99),
        t === bare ? '1.00' : fmt(ratio, 2),
        cpu,
        fmt(s.bad),
        verdict,
      ])
    }
    console.log(`\n${table(rows)}\n`)
    console.log(
      `Targets: authenticated throughput at least ${TARGET_RATIO * 100}% of the bare route's, p99 under ${TARGET_P99_MS} ms, no failed requests: ${allOk ? 'met' : 'MISSED'}`,
    )
    if (base.bad > 0 || wharfs.some((w) => summary(w).bad > 0)) process.exitCode = 1
  } finally {
    await Promise.all([
      ...wharfs.map((w) => stopChild(w.proc)),
      bare ? stopChild(bare.proc) : Promise.resolve(),
    ])
    await runCleanups()
    if (profiles)
      console.log(`CPU profiles of the Wharf processes: ${profiles} (open in Chrome DevTools or speedscope)`)
  }
}

// A hard bound on the whole run, whatever hangs.
const budgetMs = ((WARMUP + ROUNDS * DURATION) * (PG_URL ? 3 : 2) + 120) * 1000
const watchdog = setTimeout(() => {
  console.error(`bench: gave up after ${budgetMs / 1000} s`)
  abort(1)
}, budgetMs)

main()
  .catch((err) => {
    console.error(`bench failed: ${err instanceof Error ? err.message : err}`)
    process.exitCode = 1
  })
  .finally(() => clearTimeout(watchdog))
