// `npm run bench:endpoints`: webhook endpoints. (1) With 1, 10 and 100 endpoints (webhook
// behaviors on one folder, each with its own URL on the benchmark listener, a path of its own):
// the latency from a committed upload (the action=end response) to each endpoint's listener
// answering 2xx, uploads one after another; then an outage: every endpoint paused, notifications
// for them held (written into the outbox as Wharf leaves the ones it claims for a paused endpoint,
// in turn to each endpoint), the endpoints enabled again, and the deliveries per second while they
// drain. (2) Recovery: the site's listener endpoint paused while 100,000 notifications wait for it,
// then enabled: the time from the enable to the last delivery, against a bare undici loop sending
// as many signed requests with the same concurrency to the same listener, before and after Wharf.
// Every drain is checked in the delivery log (each notification delivered, in one attempt).
// Wharf's CPU per delivery (and on PostgreSQL its database backends') is read from /proc.
//
// Settings (environment): BENCH_ENDPOINT_EVENTS (20,000 per endpoint count), BENCH_RECOVERY_EVENTS
// (100,000), BENCH_ENDPOINT_UPLOADS (100 per endpoint count), WEBHOOK_CONCURRENCY (64, Wharf's
// default; the bare loop uses it too), BENCH_DATABASE_URL (also runs against PostgreSQL),
// BENCH_ENDPOINT_ANALYZE=1 (PostgreSQL: ANALYZE the outbox right after the enables). See
// docs/performance.md, "Running the benchmarks".
import crypto from 'node:crypto'
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
  intSetting,
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
  undelivered,
} from './webhook-backlog.js'
import { bareLoop } from './webhook-bare-loop.js'
import { api, pct, upload } from './webhook-latency.js'
import { listenerRate, startListener } from './webhook-listener-client.js'

const EVENTS = intSetting('BENCH_ENDPOINT_EVENTS', 20_000, 100, 10_000_000)
const BACKLOG = intSetting('BENCH_RECOVERY_EVENTS', 100_000, 100, 10_000_000)
const UPLOADS = intSetting('BENCH_ENDPOINT_UPLOADS', 100, 10, 100_000)
const CONCURRENCY = intSetting('WEBHOOK_CONCURRENCY', 64, 1, 1024)
const PG_URL = process.env['BENCH_DATABASE_URL'] || undefined
// PostgreSQL: ANALYZE the outbox once the enables have answered, as autovacuum does a while after
// so many rows changed; without it the statistics are those of the outage (every row held).
const ANALYZE = process.env['BENCH_ENDPOINT_ANALYZE'] === '1'
const COUNTS = [1, 10, 100]
const WARMUP_UPLOADS = 10
const TARGET_P99_MS = 100
const timeoutMs = (n) => Math.max(120_000, (n / 50) * 1000)
const clock = () => performance.timeOrigin + performance.now()

/** The site's endpoints (GET /webhook_endpoints, one page). */
async function endpoints(w) {
  const list = await api(w, 'GET', '/webhook_endpoints?per_page=1000')
  if (list.length >= 1000) throw new Error('more than 1,000 endpoints')
  return list
}

/**
 * k webhook behaviors on a new folder, each with one URL of its own on the listener (its own
 * path), triggered by uploads: k endpoints, checked in GET /webhook_endpoints.
 */
async function makeEndpoints(w, listener, folder, k) {
  await api(w, 'POST', `/folders/${folder}`, {})
  const origin = new URL(listener.url).origin
  const ids = new Set()
  for (let i = 0; i < k; i++) {
    const b = await api(w, 'POST', '/behaviors', {
      path: folder,
      behavior: 'webhook',
      value: {
        urls: [`${origin}/hooks/${folder}/endpoint-${i}`],
        triggers: ['Upload'],
        verification_token: `token-${folder}-${i}`,
      },
    })
    ids.add(b.id)
  }
  const mine = (await endpoints(w)).filter((e) => ids.has(e.behavior_id))
  if (mine.length !== k || new Set(mine.map((e) => e.url)).size !== k)
    throw new Error(`${folder}: ${mine.length} endpoints for ${k} behaviors`)
  return mine
}

/**
 * Uploads one after another into the endpoints' folder; each is timed from its action=end
 * response to each endpoint's request at the listener (all k are waited for).
 */
async function latency(w, listener, folder, k) {
  await listener.reset({ track: true })
  const bytes = crypto.randomBytes(1024)
  const each = []
  const last = []
  for (let i = 0; i < WARMUP_UPLOADS + UPLOADS; i++) {
    const p = `${folder}/latency-${i}.txt`
    const seen = new Map()
    // Waited for before the upload: on SQLite a notification can arrive before the response.
    const all = listener.next(
      (m) => {
        if (m.path !== p) return undefined
        seen.set(m.url, m.at)
        return seen.size === k ? seen : undefined
      },
      30_000,
      `the ${k} requests for ${p}`,
    )
    all.catch(() => {}) // awaited below
    const { ended } = await upload(w, p, bytes)
    const got = await all
    if (i < WARMUP_UPLOADS) continue
    for (const at of got.values()) each.push(at - ended)
    last.push(Math.max(...got.values()) - ended)
  }
  const r = await listener.report()
  const expected = (WARMUP_UPLOADS + UPLOADS) * k
  if (r.count !== expected) throw new Error(`latency: the listener got ${r.count} requests of ${expected}`)
  each.sort((a, b) => a - b)
  last.sort((a, b) => a - b)
  return { p50: pct(each, 50), p99: pct(each, 99), max: each[each.length - 1], lastP99: pct(last, 99) }
}

/**
 * An outage and its end: the endpoints paused, `n` notifications held for them (in turn), checked
 * as queued in GET /webhook_endpoints, then every endpoint enabled at once (PATCH state enabled,
 * as an operator does when the listener is back). Measured from the first enable sent to the last
 * request at the listener and to the last notification marked delivered; CPU from the enable.
 */
async function outage(w, db, facts, listener, eps, n) {
  for (const e of eps) await api(w, 'PATCH', `/webhook_endpoints/${e.id}`, { state: 'paused' })
  const targets = eps.map((e) => (e.behavior_id === null ? null : { behaviorId: e.behavior_id, url: e.url }))
  const range = await insertBacklog(db, facts, n, { state: 'held', targets })
  if (range.count !== n) throw new Error(`backlog: ${range.count} rows written`)
  const queued = new Map((await endpoints(w)).map((e) => [e.id, e]))
  for (const [i, e] of eps.entries()) {
    const want = Math.floor(n / eps.length) + (i < n % eps.length ? 1 : 0)
    const got = queued.get(e.id)
    if (got?.state !== 'paused' || got.queued_count !== want)
      throw new Error(`endpoint ${e.id}: ${got?.state}, ${got?.queued_count} queued of ${want}`)
  }
  await listener.reset({ expect: n })
  const done = listener.next((m) => m.done, timeoutMs(n), `all ${fmt(n)} notifications`)
  done.catch(() => {}) // awaited below
  const pid = w.proc.child.pid
  const [cpu0, listenerCpu0, dbCpu0] = [
    await cpuSeconds(pid),
    await cpuSeconds(listener.proc.child.pid),
    await backendCpu(db),
  ]
  const t0 = clock()
  await Promise.all(eps.map((e) => api(w, 'PATCH', `/webhook_endpoints/${e.id}`, { state: 'enabled' })))
  const enabled = (clock() - t0) / 1000
  // What the listener had when every enable had answered: the rate after that leaves out the
  // enables' own work (each answer reads the endpoint's delivery log of the last hour and day).
  const atEnabled = await listener.report()
  if (ANALYZE && db.pool) await db.all('analyze webhook_notifications')
  await done
  const listenerCpu = (await cpuSeconds(listener.proc.child.pid)) - listenerCpu0
  // An attempt that timed out is retried (first after 5 s): wait for those too.
  const deadline = Date.now() + 600_000
  while ((await undelivered(db, range)) > 0) {
    if (Date.now() > deadline) throw new Error('the listener got enough requests, the outbox still has some')
    await new Promise((r) => setTimeout(r, 50))
  }
  const cpu = (await cpuSeconds(pid)) - cpu0
  const dbCpu = dbCpu0 && backendCpuSpent(dbCpu0, await backendCpu(db))
  const r = await listener.report()
  const log = await deliveryFacts(db, range)
  // Every notification delivered once at least (at-least-once delivery: an attempt Wharf saw
  // fail, a timeout, may have reached the listener too); the extra attempts are reported.
  const valid =
    r.count >= n &&
    log.attempts >= n &&
    log.succeeded === n &&
    log.notifications === n &&
    log.delivered === n &&
    (log.attempts > n || log.attemptedOnce === n)
  if (!valid) throw new Error(`invalid run: listener got ${r.count}, log ${JSON.stringify(log)}`)
  if (log.attempts > n)
    console.log(
      `  ${fmt(log.attempts - n)} attempts beyond the first (${fmt(log.attempts - log.succeeded)} failed), the listener got ${fmt(r.count)} requests`,
    )
  return {
    n,
    extra: log.attempts - n,
    rate: listenerRate(r),
    enabled,
    afterEnabled:
      n - atEnabled.count < 2
        ? null
        : ((n - atEnabled.count) * 1000) /
          (r.last - (atEnabled.count > 0 ? atEnabled.last : t0 + enabled * 1000)),
    drain: (r.last - t0) / 1000,
    allDelivered: (log.lastDeliveredAt - t0) / 1000,
    cpu,
    dbCpu,
    listenerCpu,
  }
}

async function run(label, listener, databaseUrl) {
  const env = { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_CONCURRENCY: String(CONCURRENCY) }
  const w = await startWharf(`Wharf, ${label}`, databaseUrl, env)
  const db = openDatabase(w, databaseUrl)
  try {
    const facts = await siteFacts(db)
    // The site listener, off until the recovery (nothing is queued for it while off); its keys
    // sign the bare loop's requests (a behavior's token signs the same way).
    const settings = await api(w, 'PATCH', '/webhook_settings', {
      url: listener.url,
      triggers: ['Upload'],
      enabled: false,
    })
    const keys = { verificationToken: settings.verification_token, signingSecret: settings.signing_secret }
    const bare = (n) =>
      bareLoop(listener, { keys, facts, n, concurrency: CONCURRENCY, timeoutMs: timeoutMs(n) })
    await bare(Math.min(EVENTS, 2000)) // warm-up of this process's JIT
    // Warm-up of Wharf's delivery path, on an endpoint of its own.
    await outage(
      w,
      db,
      facts,
      listener,
      await makeEndpoints(w, listener, 'warm-up', 1),
      Math.min(EVENTS, 2000),
    )
    const counts = []
    let before = await bare(EVENTS)
    for (const k of COUNTS) {
      const folder = `endpoints-${k}`
      const eps = await makeEndpoints(w, listener, folder, k)
      const lat = await latency(w, listener, folder, k)
      const drain = await outage(w, db, facts, listener, eps, EVENTS)
      const after = await bare(EVENTS)
      counts.push({ k, lat, drain, bare: [before, after] })
      console.log(
        `  ${label}, ${k} endpoint(s): upload → listener p50 ${fmt(lat.p50, 1)} ms, p99 ${fmt(lat.p99, 1)} ms; ${fmt(drain.rate)} deliveries/s (bare ${fmt(mean([before, after], 'rate'))}/s)`,
      )
      before = after
    }
    // Recovery: the site listener's endpoint, through which every upload would go.
    await api(w, 'PATCH', '/webhook_settings', { enabled: true })
    const site = (await endpoints(w)).find((e) => e.behavior_id === null)
    if (!site) throw new Error('no endpoint for the site listener')
    const bare1 = await bare(BACKLOG)
    const recovery = await outage(w, db, facts, listener, [site], BACKLOG)
    const bare2 = await bare(BACKLOG)
    console.log(
      `  ${label}, recovery of ${fmt(BACKLOG)}: drained in ${fmt(recovery.drain, 1)} s (${fmt(recovery.rate)}/s); bare loop ${fmt(bare1.seconds, 1)} and ${fmt(bare2.seconds, 1)} s`,
    )
    return { label, counts, recovery: { ...recovery, bare: [bare1, bare2] } }
  } finally {
    await db.close()
    await stopChild(w.proc)
  }
}

const mean = (xs, key) => xs.reduce((sum, x) => sum + x[key], 0) / xs.length

function report(results) {
  const us = (s, n) => (s === undefined ? '' : fmt((s * 1e6) / n))
  const rows = [
    [
      'run',
      'deliveries/s',
      'bare/s',
      'vs bare',
      'Wharf CPU µs each',
      'database CPU µs each',
      'enables s',
      'after them /s',
      'extra attempts',
      'p50 ms',
      'p99 ms',
      'p99 of the last, ms',
      'latency target',
    ],
  ]
  let ok = true
  for (const r of results) {
    for (const c of r.counts) {
      const bare = mean(c.bare, 'rate')
      const met = c.lat.p99 < TARGET_P99_MS
      ok &&= met
      rows.push([
        `${r.label}, ${c.k} endpoint${c.k === 1 ? '' : 's'}`,
        fmt(c.drain.rate),
        fmt(bare),
        fmt(c.drain.rate / bare, 2),
        us(c.drain.cpu, c.drain.n),
        us(c.drain.dbCpu, c.drain.n),
        fmt(c.drain.enabled, 2),
        c.drain.afterEnabled === null ? '' : fmt(c.drain.afterEnabled),
        fmt(c.drain.extra),
        fmt(c.lat.p50, 1),
        fmt(c.lat.p99, 1),
        fmt(c.lat.lastP99, 1),
        met ? 'met' : 'MISSED',
      ])
    }
  }
  const rrows = [
    [
      'run',
      'events',
      'drain s',
      'until all marked delivered s',
      'deliveries/s',
      'bare loop s (mean of 2)',
      'vs bare',
      'Wharf CPU µs each',
      'database CPU µs each',
      'listener CPU µs each (bare)',
      'extra attempts',
    ],
  ]
  for (const r of results) {
    const x = r.recovery
    const bareSeconds = mean(x.bare, 'seconds')
    rrows.push([
      r.label,
      fmt(x.n),
      fmt(x.drain, 1),
      fmt(x.allDelivered, 1),
      fmt(x.rate),
      fmt(bareSeconds, 1),
      fmt(bareSeconds / x.drain, 2),
      us(x.cpu, x.n),
      us(x.dbCpu, x.n),
      `${us(x.listenerCpu, x.n)} (${us(mean(x.bare, 'listenerCpu'), x.n)})`,
      fmt(x.extra),
    ])
  }
  console.log(
    `\nEndpoints: ${fmt(EVENTS)} held notifications drained per count; ${UPLOADS} uploads timed per count (each to every endpoint):\n${table(rows)}\n`,
  )
  console.log(
    `Recovery: held notifications for the site listener drained after its enable:\n${table(rrows)}\n`,
  )
  console.log(
    `Targets (upload → listener p99 under ${TARGET_P99_MS} ms with each endpoint count; throughput: none, reported): ${ok ? 'met' : 'MISSED'}`,
  )
}

async function main() {
  await fs.access(path.join(root, 'dist', 'cli.js')).catch(() => {
    throw new Error('dist/cli.js is missing: run `npm run build` first (npm run bench:endpoints does)')
  })
  console.log(
    `Wharf webhook endpoints benchmark: 1, 10 and 100 endpoints (${fmt(EVENTS)} held notifications, ${UPLOADS} uploads each); recovery of ${fmt(BACKLOG)}; ${CONCURRENCY} in flight${ANALYZE ? '; PostgreSQL: ANALYZE after the enables' : ''}`,
  )
  const [l1, l5, l15] = os.loadavg()
  console.log(
    `Node ${process.version}, ${os.cpus().length} CPU(s): ${os.cpus()[0]?.model ?? 'unknown'}; load average ${fmt(l1, 2)} ${fmt(l5, 2)} ${fmt(l15, 2)}; ${new Date().toISOString()}\n`,
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
  }
  report(results)
  const [e1, e5, e15] = os.loadavg()
  console.log(`Load average at the end: ${fmt(e1, 2)} ${fmt(e5, 2)} ${fmt(e15, 2)}`)
}

// A hard bound on the whole run, whatever hangs.
const watchdog = setTimeout(
  () => {
    console.error('bench: gave up after the time limit')
    abort(1)
  },
  (600 + ((EVENTS * 4 + BACKLOG * 3) / 200) * 4) * 1000,
)
watchdog.unref()
main().catch((err) => {
  console.error(`bench failed: ${err instanceof Error ? err.message : err}`)
  process.exitCode = 1
})
