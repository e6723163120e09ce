// `npm run bench:history`: GET /history?per_page=1000 over 1,000,000 actions of the last 24 hours,
// the first page and a page about 500 pages deep (reached by following X-Files-Cursor-Next), each
// requested over and over by one client. Wharf runs from dist in its own process on 127.0.0.1;
// the actions are written straight into its database.
//
// Settings (environment): BENCH_ACTIONS (1,000,000), BENCH_DEPTH pages (500), BENCH_REQUESTS timed
// per page (200), BENCH_DATABASE_URL (adds a PostgreSQL run, in a database created and dropped by
// this run), BENCH_EXPLAIN=1 (prints the query plans), BENCH_PROFILE=1 (CPU profile of Wharf).
// See docs/performance.md, "Running the benchmarks".
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import {
  abort,
  cleanups,
  createPgDatabase,
  dropPgDatabase,
  fmt,
  intSetting,
  profilesUsed,
  root,
  runCleanups,
  startWharf,
  stopChild,
  table,
} from './harness.js'

const ACTIONS = intSetting('BENCH_ACTIONS', 1_000_000, 1, 100_000_000)
const DEPTH = intSetting('BENCH_DEPTH', 500, 1, 1_000_000)
const REQUESTS = intSetting('BENCH_REQUESTS', 200, 1, 1_000_000)
const PG_URL = process.env['BENCH_DATABASE_URL'] || undefined
const EXPLAIN = process.env['BENCH_EXPLAIN'] === '1'
const PER_PAGE = 1000
const HOUR = 3_600_000
const { describeFileAction } = await import(path.join(root, 'dist/modules/files/file-display.js'))

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
  return {
    site_id: siteId,
    created_at: now - 23 * HOUR + Math.floor((i * 23 * HOUR) / n),
    user_id: failed ? null : user,
    username: `user${user}`,
    action: act,
    path: p,
    folder: p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '',
    source,
    destination,
    display,
    ip: `10.0.${rnd() % 256}.${rnd() % 256}`,
    interface: 'restapi',
    failure_type: failed ? 'password_mismatch' : null,
    targets,
  }
}
/** The columns written: the keys of a row, so that names and values cannot drift apart. */
const COLUMNS = Object.keys(action(0, 1, 0, 0, () => 0))
const PG_TYPES = { site_id: 'bigint', created_at: 'bigint', user_id: 'bigint' }

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
    const types = COLUMNS.map((c, i) => `$${i + 1}::${PG_TYPES[c] ?? 'text'}[]`)
    const sql = `insert into actions (${COLUMNS.join(', ')}) select * from unnest(${types.join(', ')})`
    const client = await pool.connect()
    try {
      const site = (await client.query('select id from sites limit 1')).rows[0].id
      await client.query('begin')
      for (let i = 0; i < ACTIONS; i += BATCH) {
        const cols = COLUMNS.map(() => [])
        for (let j = i; j < Math.min(ACTIONS, i + BATCH); j++) {
          const row = action(j, ACTIONS, Number(site), now, rnd)
          for (const [c, name] of COLUMNS.entries()) cols[c].push(row[name])
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
        for (let j = i; j < end; j++) {
          const row = action(j, ACTIONS, site, now, rnd)
          for (const name of COLUMNS) values.push(row[name])
        }
        ;(end - i === BATCH ? full : insert(end - i)).run(values)
      }
    })()
    db.pragma('wal_checkpoint(TRUNCATE)')
    db.close()
  }
  console.log(`${w.label}: ${fmt(ACTIONS)} actions written in ${fmt((Date.now() - started) / 1000, 1)} s`)
}

// ---------- measuring ----------

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]

/**
 * One client, one request at a time: the latency of each page as a caller sees it, body included.
 * The URLs take turns, so that each meets the same state of the server (JIT, caches, GC).
 */
async function timed(w, urls, n) {
  const once = async (url) => {
    const t = performance.now()
    const res = await fetch(url, { headers: w.headers })
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
      headers: w.headers,
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
  const w = await startWharf(label, databaseUrl, {}, { site_wide: true, name: 'history benchmark' })
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
    await stopChild(w.proc)
  }
}

async function main() {
  await fs.access(path.join(root, 'dist', 'cli.js')).catch(() => {
    throw new Error('dist/cli.js is missing: run `npm run build` first (npm run bench:history does)')
  })
  console.log(
    `Wharf history benchmark: ${fmt(ACTIONS)} actions, GET /history?per_page=${PER_PAGE}, ` +
      `first page and page ${DEPTH + 1}, ${REQUESTS} timed requests each, one client`,
  )
  console.log(
    `Node ${process.version}, ${os.cpus().length} CPU(s): ${os.cpus()[0]?.model ?? 'unknown'}; ${new Date().toISOString()}\n`,
  )
  const results = []
  try {
    results.push(await run('SQLite'))
    if (PG_URL) {
      const d = await createPgDatabase(PG_URL)
      cleanups.push(() => dropPgDatabase(PG_URL, d.name))
      results.push(await run('PostgreSQL', d.url))
    }
  } finally {
    await runCleanups()
    if (profilesUsed()) console.log(`CPU profiles of the Wharf processes: ${profilesUsed()}`)
  }
  let ok = true
  const rows = [['database', 'page', 'p50 ms', 'p99 ms', 'body KiB', 'deep/first (p50)', 'targets']]
  const cells = (m) => [fmt(m.p50, 1), fmt(m.p99, 1), fmt(m.bytes / 1024)]
  for (const r of results) {
    const ratio = r.deep.p50 / r.first.p50
    const met = ratio <= 1.5 && r.first.p50 < 50 && r.deep.p50 < 50
    ok &&= met
    rows.push([r.label, 'first', ...cells(r.first), '', ''])
    rows.push([r.label, `page ${DEPTH + 1}`, ...cells(r.deep), fmt(ratio, 2), met ? 'met' : 'MISSED'])
  }
  console.log(`\n${table(rows)}`)
  console.log(
    `\nTargets (deep page p50 at most 1.5x the first, both p50 under 50 ms): ${ok ? 'met' : 'MISSED'}`,
  )
}

// A hard bound on the whole run, whatever hangs.
const watchdog = setTimeout(() => {
  console.error('bench: gave up after 30 minutes')
  abort(1)
}, 30 * 60_000)
watchdog.unref()
main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
