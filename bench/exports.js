// `npm run bench:exports`: a webhook-log export of 1,000,000 log records, from
// `POST /action_notification_exports` to the last byte of the CSV at `results_url`, next to the
// database's own command-line tool writing the same rows as CSV in the same run (`sqlite3 -csv`;
// with BENCH_DATABASE_URL also PostgreSQL against `psql \copy … csv`), and how much the server's
// resident memory grows while it builds and serves the export.
//
// Settings (environment): BENCH_EXPORT_RECORDS (1,000,000), BENCH_DATABASE_URL (adds PostgreSQL,
// in a database the run creates and drops), BENCH_PROFILE=1 (CPU profile of Wharf).
// See docs/performance.md, "Running the benchmarks".
import { execFile } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import path from 'node:path'
import {
  abort,
  cleanups,
  createPgDatabase,
  dropPgDatabase,
  fmt,
  intSetting,
  json,
  profilesUsed,
  restartWharf,
  root,
  runCleanups,
  startWharf,
  stopChild,
  table,
} from './harness.js'
import { openDatabase, siteFacts } from './webhook-backlog.js'

const N = intSetting('BENCH_EXPORT_RECORDS', 1_000_000, 1_000, 20_000_000)
const PG_URL = process.env['BENCH_DATABASE_URL'] || undefined
const TARGET_RATIO = 2
const TARGET_RSS_MIB = 100
const ATTEMPTS_PER_NOTIFICATION = 4

// ---------- the log, written straight into the database while Wharf is stopped ----------

const NOTIFICATION_COLUMNS = [
  'site_id',
  'action_id',
  'message_id',
  'operation',
  'user_id',
  'username',
  'protocol',
  'path',
  'sourcepath',
  'folder',
  'state',
  'attempts',
  'max_attempts',
  'next_attempt_at',
  'lease_owner',
  'lease_until',
  'created_at',
  'updated_at',
]
// The log's own column list, from the build: the benchmark writes records as Wharf stores them.
const { ATTEMPT_COLUMNS } = await import(path.join(root, 'dist/webhooks/delivery-log-sql.js'))
const OUTCOMES = [
  { status: 204, message: 'OK', success: 1, body: '' },
  { status: 500, message: 'HTTP 500 Internal Server Error', success: 0, body: 'upstream failed\n' },
  { status: 7, message: 'Could not connect: connect ECONNREFUSED 127.0.0.1:9', success: 0, body: '' },
  { status: 28, message: 'Timed out after 15000 ms', success: 0, body: '' },
]

/**
 * Records [from, to) of a deterministic, varied log of n records over the last 30 days: one
 * notification per four attempts, three failures (500, refused, timed out) then a success.
 */
function logRows(facts, from, to, n, now) {
  const notifications = []
  const attempts = []
  const start = now - 30 * 86_400_000
  const step = (30 * 86_400_000) / n
  for (let i = from; i < to; i += ATTEMPTS_PER_NOTIFICATION) {
    const folder = `projects/p${(i >> 2) % 1500}/incoming`
    const file = `${folder}/report-${String(i >> 2).padStart(7, '0')}.csv`
    const t = Math.floor(start + i * step)
    notifications.push({
      site_id: facts.siteId,
      action_id: null,
      message_id: `msg_${crypto.randomBytes(12).toString('hex')}`,
      operation: 'Upload',
      user_id: facts.userId,
      username: facts.username,
      protocol: 'restapi',
      path: file,
      sourcepath: '',
      folder,
      state: 'delivered',
      attempts: ATTEMPTS_PER_NOTIFICATION,
      max_attempts: 0,
      next_attempt_at: null,
      lease_owner: null,
      lease_until: null,
      created_at: t,
      updated_at: t,
    })
    for (let a = 1; a <= ATTEMPTS_PER_NOTIFICATION && i + a <= to; a++) {
      const o = a === ATTEMPTS_PER_NOTIFICATION ? OUTCOMES[0] : OUTCOMES[(i + a) % OUTCOMES.length]
      const body = JSON.stringify({
        accountname: facts.accountname,
        username: facts.username,
        operation: 'Upload',
        protocol: 'restapi',
        path: file,
        sourcepath: '',
        attempt: a,
      })
      const headers = JSON.stringify({
        'content-type': 'application/json',
        'user-agent': 'Wharf-Webhook',
        'x-service-signature': crypto.createHash('md5').update(body).digest('hex'),
        'webhook-id': notifications.at(-1).message_id,
        'webhook-timestamp': String(Math.floor(t / 1000)),
        'webhook-signature': `v1,${crypto.createHash('sha256').update(body).digest('base64')}`,
      })
      attempts.push({
        site_id: facts.siteId,
        notification_id: i / ATTEMPTS_PER_NOTIFICATION + 1,
        attempt: a,
        created_at: Math.floor(t + (a - 1) * step),
        user_id: facts.userId,
        operation: 'Upload',
        status: o.status,
        message: o.message,
        success: o.success,
        request_headers: headers,
        request_method: 'POST',
        request_url: 'https://hooks.example.com/wharf',
        request_body: body,
        path: file,
        folder,
        response_size: Buffer.byteLength(o.body),
        response_body: o.body,
        duration_ms: 3,
      })
    }
  }
  return { notifications, attempts }
}

const PG_INT = new Set([
  'site_id',
  'action_id',
  'notification_id',
  'attempt',
  'created_at',
  'user_id',
  'status',
  'success',
  'response_size',
  'duration_ms',
  'behavior_id',
  'attempts',
  'max_attempts',
  'next_attempt_at',
  'lease_until',
  'updated_at',
])

async function insertRows(db, table, columns, rows, idOffset = 0) {
  const BATCH = db.pool ? 5000 : 400
  if (db.pool) {
    const types = columns.map((c, i) => `$${i + 1}::${PG_INT.has(c) ? 'bigint' : 'text'}[]`)
    const sql = `insert into ${table} (${columns.join(', ')}) select * from unnest(${types.join(', ')})`
    for (let i = 0; i < rows.length; i += BATCH) {
      const cols = columns.map((c) =>
        rows.slice(i, i + BATCH).map((r) => (c === 'notification_id' ? r[c] + idOffset : r[c])),
      )
      await db.client.query(sql, cols)
    }
    return
  }
  const one = `(${columns.map(() => '?').join(', ')})`
  const stmt = (k) =>
    db.sqlite.prepare(`insert into ${table} (${columns.join(', ')}) values ${Array(k).fill(one).join(', ')}`)
  const full = stmt(BATCH)
  for (let i = 0; i < rows.length; i += BATCH) {
    const chunk = rows.slice(i, i + BATCH)
    const values = []
    for (const r of chunk)
      for (const c of columns) values.push(c === 'notification_id' ? r[c] + idOffset : r[c])
    ;(chunk.length === BATCH ? full : stmt(chunk.length)).run(values)
  }
}

/** Writes the log in one transaction; the notifications' ids follow whatever the table holds. */
async function writeLog(db, facts) {
  const now = Date.now()
  const [m] = await db.all('select coalesce(max(id), 0) as m from webhook_notifications')
  const offset = Number(m.m)
  const CHUNK = 40_000 // a multiple of ATTEMPTS_PER_NOTIFICATION: the log is never whole in memory
  const writeAll = async () => {
    for (let from = 0; from < N; from += CHUNK) {
      const { notifications, attempts } = logRows(facts, from, Math.min(N, from + CHUNK), N, now)
      await insertRows(db, 'webhook_notifications', NOTIFICATION_COLUMNS, notifications)
      await insertRows(db, 'webhook_attempts', ATTEMPT_COLUMNS, attempts, offset)
    }
  }
  if (db.pool) {
    db.client = await db.pool.connect()
    try {
      await db.client.query('begin')
      await writeAll()
      await db.client.query('commit')
      await db.client.query('analyze webhook_attempts')
    } finally {
      db.client.release()
    }
  } else {
    db.sqlite.exec('begin')
    await writeAll()
    db.sqlite.exec('commit')
    db.sqlite.pragma('wal_checkpoint(TRUNCATE)')
  }
  const [c] = await db.all('select count(*) as n from webhook_attempts')
  if (Number(c.n) !== N) throw new Error(`the log holds ${c.n} records, expected ${N}`)
}

// ---------- the command-line tools: the same rows and columns, as CSV ----------

// The columns of an export's CSV, in the order Wharf writes them.
const SELECT = (iso) => `select id, ${iso} as created_at, status, message,
  case when success = 1 then 'true' else 'false' end as success, request_headers, request_method,
  request_url, path, folder, attempt, operation, response_size, response_body, request_body
  from webhook_attempts order by id`
const SQLITE_ISO = `strftime('%Y-%m-%dT%H:%M:%SZ', created_at / 1000, 'unixepoch')`
const PG_ISO = `to_char(to_timestamp(created_at / 1000) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`

function run(cmd, args) {
  return new Promise((resolve, reject) =>
    execFile(cmd, args, { maxBuffer: 1 << 20 }, (err, _out, stderr) =>
      err ? reject(new Error(`${cmd}: ${err.message}\n${stderr}`)) : resolve(),
    ),
  )
}

async function cliExport(w, url, out) {
  const t0 = performance.now()
  if (url)
    await run('psql', [
      url,
      '-q',
      '-c',
      `\\copy (${SELECT(PG_ISO).replace(/\s+/g, ' ')}) to '${out}' with (format csv, header)`,
    ])
  else
    await run('sqlite3', [
      '-csv',
      '-header',
      path.join(w.dataDir, 'wharf.sqlite'),
      `.once ${out}`,
      SELECT(SQLITE_ISO),
    ])
  const ms = performance.now() - t0
  return { ms, bytes: (await fs.stat(out)).size }
}

// ---------- Wharf ----------

async function rssMiB(pid) {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => '')
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024
}

/** POST the export, poll until ready, stream results_url to a file; RSS sampled throughout. */
async function wharfExport(w, out) {
  const pid = w.proc.child.pid
  const before = await rssMiB(pid)
  let peak = before
  let sampling = true
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, await rssMiB(pid))
      await new Promise((r) => setTimeout(r, 20))
    }
  })()
  const headers = { ...w.headers, 'Content-Type': 'application/json' }
  const t0 = performance.now()
  const created = await json(
    await fetch(`${w.api}/action_notification_exports`, { method: 'POST', headers, body: '{}' }),
    'POST /action_notification_exports',
  )
  let exp = created
  const deadline = Date.now() + 30 * 60_000
  while (exp.status === 'building') {
    if (Date.now() > deadline) throw new Error('the export did not finish within 30 minutes')
    await new Promise((r) => setTimeout(r, 25))
    exp = await json(
      await fetch(`${w.api}/action_notification_exports/${created.id}`, { headers: w.headers }),
      'GET export',
    )
  }
  if (exp.status !== 'ready') throw new Error(`export ${exp.status}: ${exp.failure_reason}`)
  const built = performance.now()
  // curl, as a user would fetch it: fetch()'s web streams cost the client more than the server
  // spends sending (641 MiB took 3.2–3.9 s through them).
  await run('curl', ['-sS', '--fail', '-o', out, exp.results_url])
  const ms = performance.now() - t0
  sampling = false
  await sampler
  return {
    ms,
    buildMs: built - t0,
    downloadMs: ms - (built - t0),
    bytes: (await fs.stat(out)).size,
    before,
    peak,
  }
}

async function countRecords(file) {
  // RFC 4180 records: newlines inside quoted fields do not end a record.
  let inQuotes = false
  let records = 0
  for await (const chunk of (await fs.open(file)).createReadStream()) {
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]
      if (b === 0x22) inQuotes = !inQuotes
      else if (b === 0x0a && !inQuotes) records++
    }
  }
  return records - 1 // the header row
}

async function measure(label, url) {
  const w = await startWharf(label, url)
  const out = path.join(w.dataDir, 'bench-out')
  await fs.mkdir(out)
  try {
    await stopChild(w.proc)
    const db = openDatabase(w, url)
    try {
      const t0 = performance.now()
      await writeLog(db, await siteFacts(db))
      console.log(`${label}: wrote ${fmt(N)} log records in ${fmt((performance.now() - t0) / 1000, 1)} s`)
    } finally {
      await db.close()
    }
    const cli = [await cliExport(w, url, path.join(out, 'cli-1.csv'))]
    await restartWharf(w)
    const wharf = await wharfExport(w, path.join(out, 'wharf.csv'))
    await stopChild(w.proc)
    cli.push(await cliExport(w, url, path.join(out, 'cli-2.csv')))
    const records = await countRecords(path.join(out, 'wharf.csv'))
    if (records !== N) throw new Error(`${label}: the CSV holds ${records} records, expected ${N}`)
    for (const f of ['wharf.csv', 'cli-1.csv', 'cli-2.csv']) await fs.rm(path.join(out, f))
    return { label, wharf, cli, cliMs: (cli[0].ms + cli[1].ms) / 2 }
  } finally {
    await stopChild(w.proc)
  }
}

try {
  const results = [await measure('SQLite', undefined)]
  if (PG_URL) {
    const pgDb = await createPgDatabase(PG_URL)
    cleanups.push(() => dropPgDatabase(PG_URL, pgDb.name))
    results.push(await measure('PostgreSQL', pgDb.url))
  }
  const rows = [
    [
      'database',
      'records',
      'Wharf s',
      'build s',
      'download s',
      'CLI s (mean of 2)',
      'Wharf/CLI',
      'CSV MiB (Wharf / CLI)',
      'RSS growth MiB',
      'targets',
    ],
  ]
  for (const r of results) {
    const ratio = r.wharf.ms / r.cliMs
    const growth = r.wharf.peak - r.wharf.before
    rows.push([
      r.label,
      fmt(N),
      fmt(r.wharf.ms / 1000, 2),
      fmt(r.wharf.buildMs / 1000, 2),
      fmt(r.wharf.downloadMs / 1000, 2),
      fmt(r.cliMs / 1000, 2),
      fmt(ratio, 2),
      `${fmt(r.wharf.bytes / 2 ** 20)} / ${fmt(r.cli[0].bytes / 2 ** 20)}`,
      fmt(growth, 1),
      ratio <= TARGET_RATIO && growth < TARGET_RSS_MIB ? 'met' : 'MISSED',
    ])
  }
  console.log(`\n${table(rows)}\n`)
  console.log(
    `targets: Wharf at most ${TARGET_RATIO}x the command-line tool, RSS growth under ${TARGET_RSS_MIB} MiB`,
  )
  if (profilesUsed()) console.log(`CPU profiles: ${profilesUsed()}`)
  await runCleanups()
} catch (err) {
  console.error(err)
  abort(1)
}
