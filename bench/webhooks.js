// `npm run bench:webhooks`: outbound webhook delivery. (1) A backlog of N pending notifications
// written into Wharf's outbox while it is stopped, then delivered by Wharf's dispatcher to a local
// listener answering 204, next to a bare undici loop sending the same signed requests with the
// same concurrency to the same listener in the same run (before and after Wharf). (2) The latency
// from a committed upload (the action=end response) to the listener receiving its notification.
// The listener (bench/webhook-listener.js) runs in its own process; bench/webhook-backlog.js writes
// and checks the backlog, bench/webhook-latency.js makes the uploads.
//
// Settings (environment): BENCH_WEBHOOK_COUNT (20,000), BENCH_WEBHOOK_UPLOADS (300),
// WEBHOOK_CONCURRENCY (64, Wharf's default; both senders use it), BENCH_DATABASE_URL (also runs
// against PostgreSQL), BENCH_PROFILE=1 (CPU profiles of Wharf). See docs/performance.md,
// "Running the benchmarks".
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {
  abort,
  cleanups,
  cpuSeconds,
  createPgDatabase,
  dropPgDatabase,
  fmt,
  freePort,
  intSetting,
  profilesUsed,
  restartWharf,
  root,
  runCleanups,
  startWharf,
  stopChild,
  table,
} from './harness.js'
import {
  backendCpu,
  backendCpuSpent,
  deliveryFacts,
  insertBacklog,
  openDatabase,
  siteFacts,
  transactions,
  undelivered,
} from './webhook-backlog.js'
import { bareLoop as bareLoopOf } from './webhook-bare-loop.js'
import { api, latency } from './webhook-latency.js'
import { listenerRate, startListener } from './webhook-listener-client.js'

const N = intSetting('BENCH_WEBHOOK_COUNT', 20_000, 100, 10_000_000)
const UPLOADS = intSetting('BENCH_WEBHOOK_UPLOADS', 300, 10, 100_000)
const CONCURRENCY = intSetting('WEBHOOK_CONCURRENCY', 64, 1, 1024)
const PROCESSES = intSetting('BENCH_WEBHOOK_PROCESSES', 2, 1, 8) // PostgreSQL only
const PG_URL = process.env['BENCH_DATABASE_URL'] || undefined
const WARMUP_UPLOADS = 20
const TARGET_RATIO = 0.5
const TARGET_RATE = 1000 // SQLite only
const TARGET_P99_MS = 100
const deliveryTimeoutMs = Math.max(120_000, (N / 50) * 1000)

// ---------- the bare loop ----------

/** N requests (bench/webhook-bare-loop.js) with the run's concurrency. */
const bareLoop = (listener, keys, facts, n = N) =>
  bareLoopOf(listener, { keys, facts, n, concurrency: CONCURRENCY, timeoutMs: deliveryTimeoutMs })

// ---------- Wharf ----------

/** A second Wharf (stopped) on the same database as `w`: a port and data directory of its own. */
async function anotherWharf(w) {
  const port = await freePort()
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-bench-'))
  cleanups.push(() => fs.rm(dataDir, { recursive: true, force: true }))
  const env = { ...w.env, PORT: String(port), DATA_DIR: dataDir }
  const url = `http://127.0.0.1:${port}/api/rest/v1/api_key`
  const other = { ...w, env, url, label: `${w.label} (2)` }
  other.proc = { child: { exitCode: 0, signalCode: null } }
  cleanups.push(() => stopChild(other.proc))
  return other
}

async function memoryPeak(pid) {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => '')
  return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024
}

/** The backlog delivered by a freshly started Wharf, checked against the delivery log. */
async function deliverBacklog(ws, listener, db, range) {
  await listener.reset({ expect: N })
  const done = listener.next((m) => m.done, deliveryTimeoutMs, `all ${fmt(N)} notifications`)
  const xacts0 = await transactions(db)
  const starts = ws.map(restartWharf)
  const started = Promise.all(starts)
  // restartWharf has spawned the processes by now; CPU counts from the first delivery, not
  // start-up: for each process from the later of the first delivery and its being ready (a
  // second process may still be starting when the first has begun delivering).
  const pids = ws.map((w) => w.proc.child.pid)
  const atReady = starts.map((p, i) => p.then(() => cpuSeconds(pids[i])))
  const wharfCpu = async () => (await Promise.all(pids.map(cpuSeconds))).reduce((a, b) => a + b, 0)
  const first = listener.next((m) => m.first, 60_000, 'first notification')
  const cpuAtFirst = first.then(async () => {
    const at = await Promise.all(pids.map(cpuSeconds))
    const ready = await Promise.all(atReady)
    const wharf = at.reduce((sum, c, i) => sum + Math.max(c, ready[i]), 0)
    return [wharf, await cpuSeconds(listener.proc.child.pid), await backendCpu(db)]
  })
  // Awaited below; until then a failure elsewhere must not also surface as an unhandled rejection.
  for (const p of [done, cpuAtFirst, ...atReady]) p.catch(() => {})
  await started
  const [cpu0, listenerCpu0, dbCpu0] = await cpuAtFirst
  await done
  const listenerCpu = (await cpuSeconds(listener.proc.child.pid)) - listenerCpu0
  const deadline = Date.now() + 60_000
  while ((await undelivered(db, range)) > 0) {
    if (Date.now() > deadline) throw new Error('the listener got every request, the outbox still has some')
    await new Promise((r) => setTimeout(r, 50))
  }
  const cpu = (await wharfCpu()) - cpu0
  const dbCpu = dbCpu0 && backendCpuSpent(dbCpu0, await backendCpu(db))
  const peakMiB = Math.max(...(await Promise.all(pids.map(memoryPeak))))
  const r = await listener.report()
  // PostgreSQL: the backends report their transactions as they end, once Wharf has stopped.
  await Promise.all(ws.map((w) => stopChild(w.proc)))
  await new Promise((r) => setTimeout(r, 500))
  const xacts = xacts0 === undefined ? undefined : (await transactions(db)) - xacts0
  const log = await deliveryFacts(db, range)
  const valid =
    r.count === N &&
    log.attempts === N &&
    log.succeeded === N &&
    log.notifications === N &&
    log.delivered === N &&
    log.attemptedOnce === N
  if (!valid) throw new Error(`invalid run: listener got ${r.count}, log ${JSON.stringify(log)}`)
  return {
    rate: listenerRate(r),
    allDeliveredRate: (N * 1000) / (log.lastDeliveredAt - r.first),
    cpu,
    dbCpu,
    xacts,
    listenerCpu,
    peakMiB,
    bytes: r.bytes,
  }
}

async function run(label, listener, databaseUrl) {
  const env = { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_CONCURRENCY: String(CONCURRENCY) }
  const w = await startWharf(`Wharf, ${label}`, databaseUrl, env)
  let db
  try {
    const keys = await api(w, 'PATCH', '/webhook_settings', {
      url: listener.url,
      triggers: ['Upload'],
      enabled: true,
    })
    const lat = await latency(w, listener, UPLOADS, WARMUP_UPLOADS)
    console.log(
      `  ${label}: upload → listener over ${UPLOADS} uploads: p50 ${fmt(lat.p50, 1)} ms, p99 ${fmt(lat.p99, 1)} ms (min ${fmt(lat.min, 1)}, max ${fmt(lat.max, 1)})`,
    )
    await stopChild(w.proc)
    db = openDatabase(w, databaseUrl)
    const facts = await siteFacts(db)
    const t = Date.now()
    const range = await insertBacklog(db, facts, N)
    if (range.count !== N) throw new Error(`backlog: ${range.count} rows written`)
    console.log(`  ${label}: ${fmt(N)} pending notifications written in ${fmt((Date.now() - t) / 1000, 1)} s`)
    const signing = { verificationToken: keys.verification_token, signingSecret: keys.signing_secret }
    await bareLoop(listener, signing, facts, Math.min(N, 2000)) // warm-up of this process's JIT
    const bare1 = await bareLoop(listener, signing, facts)
    const wharf = await deliverBacklog([w], listener, db, range)
    const bare2 = await bareLoop(listener, signing, facts)
    // PostgreSQL: two processes share one outbox (SKIP LOCKED claims); a second backlog, the
    // same size, delivered by both at once.
    let pair
    if (databaseUrl && PROCESSES > 1) {
      const range2 = await insertBacklog(db, facts, N)
      if (range2.count !== N) throw new Error(`backlog: ${range2.count} rows written`)
      const others = []
      for (let i = 1; i < PROCESSES; i++) others.push(await anotherWharf(w))
      pair = await deliverBacklog([w, ...others], listener, db, range2)
      console.log(
        `  ${label}: ${PROCESSES} processes: Wharf ${fmt(pair.rate)}/s at the listener, ${fmt(pair.allDeliveredRate)}/s until all were marked delivered`,
      )
    }
    console.log(
      `  ${label}: bare loop ${fmt(bare1.rate)} then ${fmt(bare2.rate)}/s; Wharf ${fmt(wharf.rate)}/s at the listener, ${fmt(wharf.allDeliveredRate)}/s until all were marked delivered; request bytes (bodies) ${fmt(bare1.bytes / N)} vs ${fmt(wharf.bytes / N)}`,
    )
    return { label, lat, wharf, pair, bare: [bare1, bare2] }
  } finally {
    await db?.close()
    await stopChild(w.proc)
  }
}

function report(results) {
  const rows = [
    [
      'run',
      'deliveries/s',
      'vs bare',
      'server CPU µs each',
      'database CPU µs each',
      'transactions each',
      'listener CPU µs each',
      'peak RSS MiB',
      'targets',
    ],
  ]
  const lrows = [
    ['database', 'uploads', 'p50 ms', 'p99 ms', 'min ms', 'max ms', 'from sending end: p50 / p99', 'target'],
  ]
  const us = (s) => fmt((s * 1e6) / N)
  const mean = (f) => (f(0) + f(1)) / 2
  let ok = true
  for (const r of results) {
    const bare = mean((i) => r.bare[i].rate)
    const ratio = r.wharf.rate / bare
    const met = ratio >= TARGET_RATIO && (r.label !== 'SQLite' || r.wharf.rate >= TARGET_RATE)
    const w = r.wharf
    rows.push([
      `Wharf, ${r.label}`,
      fmt(w.rate),
      fmt(ratio, 2),
      us(w.cpu),
      w.dbCpu === undefined ? '' : us(w.dbCpu),
      w.xacts === undefined ? '' : fmt(w.xacts / N, 3),
      us(w.listenerCpu),
      fmt(w.peakMiB),
      met ? 'met' : 'MISSED',
    ])
    rows.push(['  until all marked delivered', fmt(w.allDeliveredRate), '', '', '', '', '', '', ''])
    if (r.pair) {
      const p = r.pair
      rows.push([
        `  ${PROCESSES} processes, one database`,
        fmt(p.rate),
        fmt(p.rate / bare, 2),
        us(p.cpu),
        us(p.dbCpu),
        fmt(p.xacts / N, 3),
        us(p.listenerCpu),
        fmt(p.peakMiB),
        '',
      ])
    }
    const client = `${us(mean((i) => r.bare[i].clientCpu))} (client)`
    rows.push([
      '  bare undici loop (mean of 2)',
      fmt(bare),
      '1.00',
      client,
      '',
      '',
      us(mean((i) => r.bare[i].listenerCpu)),
      '',
      '',
    ])
    const l = r.lat
    const lmet = l.p99 < TARGET_P99_MS
    ok &&= met && lmet
    const cells = [l.p50, l.p99, l.min, l.max].map((x) => fmt(x, 1))
    lrows.push([
      r.label,
      UPLOADS,
      ...cells,
      `${fmt(l.sentP50, 1)} / ${fmt(l.sentP99, 1)}`,
      lmet ? 'met' : 'MISSED',
    ])
  }
  console.log(`\n${table(rows)}\n\nUpload committed (action=end response) → listener:\n${table(lrows)}\n`)
  console.log(
    `Targets (Wharf at least ${TARGET_RATIO * 100}% of the bare loop, at least ${fmt(TARGET_RATE)}/s on SQLite; ` +
      `upload → listener p99 under ${TARGET_P99_MS} ms): ${ok ? 'met' : 'MISSED'}`,
  )
}

async function main() {
  await fs.access(path.join(root, 'dist', 'cli.js')).catch(() => {
    throw new Error('dist/cli.js is missing: run `npm run build` first (npm run bench:webhooks does)')
  })
  console.log(
    `Wharf webhook benchmark: a backlog of ${fmt(N)} notifications, ${CONCURRENCY} in flight; ${UPLOADS} uploads for latency`,
  )
  console.log(
    `Node ${process.version}, ${os.cpus().length} CPU(s): ${os.cpus()[0]?.model ?? 'unknown'}; ${new Date().toISOString()}\n`,
  )
  const results = []
  try {
    const listener = await startListener()
    cleanups.push(() => stopChild(listener.proc))
    results.push(await run('SQLite', listener))
    if (PG_URL) {
      const d = await createPgDatabase(PG_URL)
      cleanups.push(() => dropPgDatabase(PG_URL, d.name))
      results.push(await run('PostgreSQL', listener, d.url))
    }
  } finally {
    await runCleanups()
    if (profilesUsed()) console.log(`CPU profiles of the Wharf processes: ${profilesUsed()}`)
  }
  report(results)
}

// A hard bound on the whole run, whatever hangs.
const watchdog = setTimeout(
  () => {
    console.error('bench: gave up after the time limit')
    abort(1)
  },
  (300 + (N / 200) * 4) * 1000,
)
watchdog.unref()
main().catch((err) => {
  console.error(`bench failed: ${err instanceof Error ? err.message : err}`)
  process.exitCode = 1
})
