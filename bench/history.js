// `npm run bench:history`: GET /history?per_page=1000 over 1,000,000 actions of the last 24 hours,
// the first page and a page about 500 pages deep (reached by following X-Files-Cursor-Next), each
// requested over and over by one client. Wharf runs from dist in its own process on 127.0.0.1;
// the actions are written straight into its database.
//
// Settings (environment): BENCH_ACTIONS (1,000,000), BENCH_DEPTH pages (500), BENCH_REQUESTS timed
// per page (200), BENCH_DATABASE_URL (adds a PostgreSQL run, in a database created and dropped by
// this run), BENCH_EXPLAIN=1 (prints the query plans), BENCH_PROFILE=1 (CPU profile of Wharf).
// See docs/performance.md, "History".
import { spawn } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import SQLite from 'better-sqlite3'
import pg from 'pg'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const setting = (name, fallback) => {
  const n = Number(process.env[name] || fallback)
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive whole number`)
  return n
}
const ACTIONS = setting('BENCH_ACTIONS', 1_000_000)
const DEPTH = setting('BENCH_DEPTH', 500)
const REQUESTS = setting('BENCH_REQUESTS', 200)
const PG_URL = process.env['BENCH_DATABASE_URL'] || undefined
const EXPLAIN = process.env['BENCH_EXPLAIN'] === '1'
const PROFILE = process.env['BENCH_PROFILE'] === '1'
const PER_PAGE = 1000
const HOUR = 3_600_000
const { describeFileAction } = await import(path.join(root, 'dist/modules/files/file-display.js'))

const children = new Set()
const cleanups = []
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
})

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

async function json(res, what) {
  const text = await res.text()
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${text.slice(0, 500)}`)
  return JSON.parse(text)
}

/** Wharf from dist with its own data folder; returns the API base and a site-wide key. */
async function startWharf(label, databaseUrl) {
  const port = await freePort()
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-bench-history-'))
  cleanups.push(() => fs.rm(dataDir, { recursive: true, force: true }))
  const password = crypto.randomBytes(12).toString('hex')
  const env = { ...process.env }
  for (const k of ['DATABASE_URL', 'BASE_URL', 'TRUST_PROXY']) delete env[k]
  Object.assign(env, {
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    ADMIN_USERNAME: 'admin',
    ADMIN_PASSWORD: password,
    RATE_LIMIT_PER_SECOND: '1000000',
    RATE_LIMIT_BURST: '10000000',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  })
  const prof = PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${os.tmpdir()}`] : []
  const child = spawn(process.execPath, [...prof, 'dist/cli.js', 'serve'], {
    cwd: root,
    env,
    stdio: 'inherit',
  })
  children.add(child)
  const api = `http://127.0.0.1:${port}/api/rest/v1`
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`${label}: Wharf exited before it was ready`)
    try {
      await fetch(`${api}/api_key`)
      break
    } catch {
      if (i > 300) throw new Error(`${label}: Wharf did not start`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  const post = (p, body, headers = {}) =>
    fetch(`${api}${p}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify(body),
    })
  const session = await json(await post('/sessions', { username: 'admin', password }), 'POST /sessions')
  const key = await json(
    await post(
      '/api_keys',
      { site_wide: true, name: 'history benchmark' },
      { 'X-ServiceAPI-Auth': session.id },
    ),
    'POST /api_keys',
  )
  const stop = async () => {
    if (child.exitCode !== null) return
    child.kill('SIGTERM')
    await new Promise((r) => child.once('exit', r))
  }
  return { label, api, key: key.key, dataDir, child, stop }
}

// ---------- the actions: a plausible day of a busy site ----------

const FILE_ACTIONS = [
  ['read', 40],
  ['create', 20],
  ['update', 8],
  ['destroy', 5],
  ['move', 4],
  ['copy', 3],
]
const OTHER_ACTIONS = [
  ['login', 12],
  ['failedlogin', 3],
  ['user_update', 2],
  ['api_key_create', 1],
  ['permission_create', 2],
]
const weighted = (list) => list.flatMap(([a, w]) => Array(w).fill(a))
const MIX = [...weighted(FILE_ACTIONS), ...weighted(OTHER_ACTIONS)]
const EXT = ['pdf', 'csv', 'txt', 'jpg', 'xlsx', 'zip']

/** Row i of n, created evenly over the last 23 hours (so all stay in the window during the run). */
function action(i, n, siteId, now, rnd) {
  const act = MIX[rnd() % MIX.length]
  const user = 1 + (rnd() % 200)
  const folder = `clients/client-${rnd() % 500}/${['in', 'out', 'archive'][rnd() % 3]}`
  const fileId = rnd() % 50_000
  const name = `report-${fileId}.${EXT[fileId % EXT.length]}`
  let p = `${folder}/${name}`
  let source = null
  let destination = null
  let display
  let targets = JSON.stringify([{ type: 'file', id: fileId + 1, name }])
  if (act === 'move' || act === 'copy') {
    source = p
    p = `clients/client-${rnd() % 500}/archive/${name}`
    destination = p
    display = describeFileAction(act, p, 'file', { source, destination })
  } else if (FILE_ACTIONS.some(([a]) => a === act)) {
    display = describeFileAction(act, p, 'file')
  } else {
    p = act === 'permission_create' ? folder : ''
    display = act === 'failedlogin' ? `Failed login for user${user}` : `${act} by user${user}`
    targets = act === 'login' || act === 'failedlogin' ? '[]' : JSON.stringify([{ type: 'user', id: user }])
  }
  const failed = act === 'failedlogin'
  return [
    siteId,
    now - 23 * HOUR + Math.floor((i * 23 * HOUR) / n),
    failed ? null : user,
    `user${user}`,
    act,
    p,
    p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '',
    source,
    destination,
    display,
    `10.0.${rnd() % 256}.${rnd() % 256}`,
    'restapi',
    failed ? 'password_mismatch' : null,
    targets,
  ]
}
const COLUMNS = [
  'site_id',
  'created_at',
  'user_id',
  'username',
  'action',
  'path',
  'folder',
  'source',
  'destination',
  'display',
  'ip',
  'interface',
  'failure_type',
  'targets',
]

function random(seed) {
  let x = seed
  return () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return x >>> 0
  }
}

async function seed(w, pool) {
  const started = Date.now()
  const rnd = random(42)
  const now = Date.now()
  const BATCH = pool ? 10_000 : 500
  if (pool) {
    const types = [
      'bigint',
      'bigint',
      'bigint',
      'text',
      'text',
      'text',
      'text',
      'text',
      'text',
      'text',
      'text',
      'text',
      'text',
      'text',
    ]
    const sql = `insert into actions (${COLUMNS.join(', ')}) select * from unnest(${types.map((t, i) => `$${i + 1}::${t}[]`).join(', ')})`
    const client = await pool.connect()
    try {
      const site = (await client.query('select id from sites limit 1')).rows[0].id
      await client.query('begin')
      for (let i = 0; i < ACTIONS; i += BATCH) {
        const cols = COLUMNS.map(() => [])
        for (let j = i; j < Math.min(ACTIONS, i + BATCH); j++) {
          const values = action(j, ACTIONS, Number(site), now, rnd)
          for (let c = 0; c < values.length; c++) cols[c].push(values[c])
        }
        await client.query(sql, cols)
      }
      await client.query('commit')
      // What autovacuum does shortly after a bulk load, done now so every run plans alike.
      await client.query('analyze actions')
    } finally {
      client.release()
    }
  } else {
    const db = new SQLite(path.join(w.dataDir, 'wharf.sqlite'))
    db.pragma('busy_timeout = 10000')
    const site = db.prepare('select id from sites limit 1').get().id
    const row = `(${COLUMNS.map(() => '?').join(', ')})`
    const insert = (rows) =>
      db.prepare(`insert into actions (${COLUMNS.join(', ')}) values ${Array(rows).fill(row).join(', ')}`)
    const full = insert(BATCH)
    db.transaction(() => {
      for (let i = 0; i < ACTIONS; i += BATCH) {
        const end = Math.min(ACTIONS, i + BATCH)
        const values = []
        for (let j = i; j < end; j++) values.push(...action(j, ACTIONS, site, now, rnd))
        ;(end - i === BATCH ? full : insert(end - i)).run(values)
      }
    })()
    db.pragma('wal_checkpoint(TRUNCATE)')
    db.close()
  }
  console.log(
    `${w.label}: ${ACTIONS.toLocaleString('en-US')} actions written in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  )
}

// ---------- measuring ----------

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]

/**
 * One client, one request at a time: the latency of each page as a caller sees it, body included.
 * The URLs take turns, so that each meets the same state of the server (JIT, caches, GC).
 */
async function timed(w, urls, n) {
  const headers = { 'X-ServiceAPI-Key': w.key }
  const once = async (url) => {
    const t = performance.now()
    const res = await fetch(url, { headers })
    const body = await res.text()
    if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status} ${body.slice(0, 300)}`)
    return { ms: performance.now() - t, bytes: body.length }
  }
  for (let i = 0; i < 20; i++) for (const url of urls) await once(url)
  const samples = urls.map(() => ({ ms: [], bytes: 0 }))
  for (let i = 0; i < n; i++) {
    for (const [u, url] of urls.entries()) {
      const r = await once(url)
      samples[u].ms.push(r.ms)
      samples[u].bytes = r.bytes
    }
  }
  return samples.map(({ ms, bytes }) => {
    ms.sort((a, b) => a - b)
    return { p50: pct(ms, 50), p99: pct(ms, 99), bytes }
  })
}

/** The cursor of page `depth + 1`, found by following X-Files-Cursor-Next from the first page. */
async function deepCursor(w, base) {
  let cursor = null
  for (let i = 0; i < DEPTH; i++) {
    const res = await fetch(cursor ? `${base}&cursor=${encodeURIComponent(cursor)}` : base, {
      headers: { 'X-ServiceAPI-Key': w.key },
    })
    await res.arrayBuffer()
    cursor = res.headers.get('x-files-cursor-next')
    if (!cursor) throw new Error(`the list ended after ${i + 1} pages`)
  }
  return cursor
}

/** The plans of the first-page and deep-page queries, built as Wharf builds them (BENCH_EXPLAIN=1). */
async function explain(w, pool) {
  const { Kysely, PostgresDialect, SqliteDialect } = await import('kysely')
  const { applyListQuery, parseListQuery } = await import(path.join(root, 'dist/http/pagination.js'))
  const { HISTORY } = await import(path.join(root, 'dist/modules/history/history-service.js'))
  const sqlite = pool ? null : new SQLite(path.join(w.dataDir, 'wharf.sqlite'), { readonly: true })
  const db = new Kysely({
    dialect: pool ? new PostgresDialect({ pool }) : new SqliteDialect({ database: sqlite }),
  })
  const lq = parseListQuery(HISTORY, { per_page: String(PER_PAGE) }, 'secret', {})
  const middle = { ...lq, cursor: { dir: 'next', key: [Date.now() - 11 * HOUR, ACTIONS / 2] } }
  for (const [name, l] of [
    ['first page', lq],
    ['deep page', middle],
  ]) {
    const base = db
      .selectFrom('actions')
      .selectAll()
      .where('site_id', '=', 1)
      .where('created_at', '>=', Date.now() - 24 * HOUR)
    const { sql, parameters } = applyListQuery(base, HISTORY, l).compile()
    const plan = pool
      ? (await pool.query(`explain (analyze, buffers) ${sql}`, parameters)).rows.map((x) => x['QUERY PLAN'])
      : sqlite
          .prepare(`explain query plan ${sql}`)
          .all(...parameters)
          .map((x) => x.detail)
    console.log(`\n${w.label}, ${name}:\n${sql}\n  ${plan.join('\n  ')}`)
  }
  sqlite?.close()
}

async function run(label, databaseUrl) {
  const w = await startWharf(label, databaseUrl)
  const pool = databaseUrl ? new pg.Pool({ connectionString: databaseUrl, max: 2 }) : null
  try {
    await seed(w, pool)
    if (EXPLAIN) await explain(w, pool)
    const base = `${w.api}/history?per_page=${PER_PAGE}`
    const cursor = await deepCursor(w, base)
    // Alternating, so that both pages meet the same state of the server (JIT, caches, GC).
    const [first, deep] = await timed(w, [base, `${base}&cursor=${encodeURIComponent(cursor)}`], REQUESTS)
    return { label, first, deep }
  } finally {
    await pool?.end()
    await w.stop()
  }
}

async function createPgDatabase(url) {
  const name = `wharf_bench_${crypto.randomBytes(4).toString('hex')}`
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  await c.query(`create database ${name}`).finally(() => c.end())
  cleanups.push(async () => {
    const d = new pg.Client({ connectionString: url })
    await d.connect()
    await d.query(`drop database if exists ${name} with (force)`).finally(() => d.end())
  })
  const u = new URL(url)
  u.pathname = `/${name}`
  return u.toString()
}

async function main() {
  await fs.access(path.join(root, 'dist', 'cli.js')).catch(() => {
    throw new Error('dist/cli.js is missing: run `npm run build` first (npm run bench:history does)')
  })
  console.log(
    `Wharf history benchmark: ${ACTIONS.toLocaleString('en-US')} actions, GET /history?per_page=${PER_PAGE}, ` +
      `first page and page ${DEPTH + 1}, ${REQUESTS} timed requests each, one client`,
  )
  console.log(
    `Node ${process.version}, ${os.cpus().length} CPU(s): ${os.cpus()[0]?.model ?? 'unknown'}; ${new Date().toISOString()}\n`,
  )
  const results = []
  try {
    results.push(await run('SQLite'))
    if (PG_URL) results.push(await run('PostgreSQL', await createPgDatabase(PG_URL)))
  } finally {
    while (cleanups.length)
      await cleanups
        .pop()()
        .catch((err) => console.error(`cleanup: ${err.message}`))
  }
  let ok = true
  console.log('\ndatabase     page        p50 ms  p99 ms  body KiB  deep/first (p50)  targets')
  for (const r of results) {
    const ratio = r.deep.p50 / r.first.p50
    const met = ratio <= 1.5 && r.first.p50 < 50 && r.deep.p50 < 50
    ok &&= met
    for (const [name, m] of [
      ['first', r.first],
      [`page ${DEPTH + 1}`, r.deep],
    ]) {
      const last = name !== 'first'
      console.log(
        `${r.label.padEnd(12)} ${name.padEnd(10)} ${m.p50.toFixed(1).padStart(7)} ${m.p99.toFixed(1).padStart(7)} ${(m.bytes / 1024).toFixed(0).padStart(9)}` +
          (last ? `  ${ratio.toFixed(2).padStart(16)}  ${met ? 'met' : 'MISSED'}` : ''),
      )
    }
  }
  console.log(
    `\nTargets (deep page p50 at most 1.5x the first, both p50 under 50 ms): ${ok ? 'met' : 'MISSED'}`,
  )
}

const watchdog = setTimeout(() => {
  console.error('bench: gave up after 30 minutes')
  process.exit(1)
}, 30 * 60_000)
watchdog.unref()
main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
