// `node bench/behavior-webhooks.js` (after `npm run build`): webhook behaviors' fan-out. For 1, 10
// and 100 webhook behaviors matching one Action (each with one URL on the local listener of
// bench/webhook-listener.js, answering 204), Actions (folders made in the behaviors' folder) are
// made until about BENCH_BEHAVIOR_DELIVERIES notifications are written; then Wharf is stopped,
// those notifications are put back in the outbox as never sent, and a restarted Wharf delivers
// them: deliveries per second at the listener, next to a bare undici loop sending as many signed
// requests with the same concurrency to the same listener (bench/webhooks.js's). Also reported:
// Actions per second while the notifications were written and sent (the fan-out's cost to an
// Action). Target: with 100 behaviors, at least 0.5 of the bare loop's rate.
//
// Settings (environment): BENCH_BEHAVIOR_DELIVERIES (5,000), WEBHOOK_CONCURRENCY (64),
// BENCH_DATABASE_URL (also runs against PostgreSQL). See docs/performance.md.
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {
  abort,
  cleanups,
  createPgDatabase,
  dropPgDatabase,
  fmt,
  intSetting,
  restartWharf,
  root,
  runCleanups,
  startWharf,
  stopChild,
  table,
} from './harness.js'
import { openDatabase, siteFacts } from './webhook-backlog.js'
import { bareLoop as sharedBareLoop } from './webhook-bare-loop.js'
import { api } from './webhook-latency.js'
import { listenerRate, startListener } from './webhook-listener-client.js'

const DELIVERIES = intSetting('BENCH_BEHAVIOR_DELIVERIES', 5_000, 100, 10_000_000)
const CONCURRENCY = intSetting('WEBHOOK_CONCURRENCY', 64, 1, 1024)
const PG_URL = process.env['BENCH_DATABASE_URL'] || undefined
const FAN_OUTS = [1, 10, 100]
const TARGET_RATIO = 0.5
const ACTION_CONCURRENCY = 8
const timeoutMs = Math.max(120_000, (DELIVERIES / 50) * 1000)

/** The bare loop of the webhook benchmarks (webhook-bare-loop.js): its rate at the listener for `n` requests. */
async function bareLoop(listener, facts, n) {
  const keys = {
    verificationToken: 'bench-token',
    signingSecret: `whsec_${Buffer.from('bench-token').toString('base64')}`,
  }
  const r = await sharedBareLoop(listener, { keys, facts, n, concurrency: CONCURRENCY, timeoutMs })
  return r.rate
}

/** Runs `work(i)` for i < n, `limit` at a time. */
async function pooled(n, limit, work) {
  let next = 0
  const worker = async () => {
    while (next < n) await work(next++)
  }
  await Promise.all(Array.from({ length: Math.min(limit, n) }, worker))
}

/** One fan-out: k behaviors on a folder, Actions in it, then their notifications delivered again from the outbox. */
async function fanOut(w, db, listener, k) {
  const folder = `fan-${k}`
  await api(w, 'POST', `/folders/${folder}`)
  for (let i = 0; i < k; i++) {
    await api(w, 'POST', '/behaviors', {
      path: folder,
      behavior: 'webhook',
      value: { urls: [`${listener.url}?b=${i}`], triggers: ['Create Folder'], verification_token: `t-${i}` },
    })
  }
  const actions = Math.max(1, Math.ceil(DELIVERIES / k))
  const n = actions * k
  // Written and sent while the Actions are made.
  await listener.reset({ expect: n })
  let live = listener.next((m) => m.done, timeoutMs, `${fmt(n)} notifications of ${k} behaviors`)
  live.catch(() => {})
  const t0 = performance.now()
  await pooled(actions, ACTION_CONCURRENCY, (i) => api(w, 'POST', `/folders/${folder}/f-${i}`))
  const actionsPerSecond = (actions * 1000) / (performance.now() - t0)
  await live
  // The same notifications, back in the outbox as never sent, delivered by a restarted Wharf.
  await stopChild(w.proc)
  const now = Date.now()
  const reset = `update webhook_notifications set state = 'pending', attempts = 0, next_attempt_at = $1,
       lease_owner = null, lease_until = null, updated_at = $2
     where behavior_id is not null and folder = $3`
  if (db.sqlite) db.sqlite.prepare(reset.replace(/\$\d+/g, '?')).run(now, now, folder)
  else await db.pool.query(reset, [now, now, folder])
  await listener.reset({ expect: n })
  live = listener.next((m) => m.done, timeoutMs, `${fmt(n)} notifications of ${k} behaviors, again`)
  live.catch(() => {})
  await restartWharf(w)
  await live
  const r = await listener.report()
  if (r.count !== n) throw new Error(`${k} behaviors: the listener got ${r.count} of ${n}`)
  return { k, n, actionsPerSecond, rate: listenerRate(r) }
}

async function run(label, listener, databaseUrl) {
  const env = { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_CONCURRENCY: String(CONCURRENCY) }
  const w = await startWharf(`Wharf, ${label}`, databaseUrl, env)
  const db = openDatabase(w, databaseUrl)
  try {
    const facts = await siteFacts(db)
    await bareLoop(listener, facts, Math.min(DELIVERIES, 2000)) // warm-up of this process's JIT
    const rows = []
    for (const k of FAN_OUTS) {
      const bare = await bareLoop(listener, facts, DELIVERIES)
      const f = await fanOut(w, db, listener, k)
      rows.push({ ...f, bare })
      console.log(
        `  ${label}, ${k} behavior(s): ${fmt(f.rate)}/s vs bare ${fmt(bare)}/s (${fmt(f.rate / bare, 2)}); ${fmt(f.actionsPerSecond)} Actions/s while writing ${fmt(f.n)} notifications`,
      )
    }
    return { label, rows }
  } finally {
    await db.close()
    await stopChild(w.proc)
  }
}

async function main() {
  await fs.access(path.join(root, 'dist', 'cli.js')).catch(() => {
    throw new Error('dist/cli.js is missing: run `npm run build` first')
  })
  console.log(
    `Wharf webhook-behavior fan-out: about ${fmt(DELIVERIES)} deliveries per fan-out, ${CONCURRENCY} in flight`,
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
  }
  const rows = [['database', 'behaviors', 'deliveries/s', 'bare loop/s', 'ratio', 'Actions/s while writing']]
  for (const r of results) {
    for (const x of r.rows)
      rows.push([
        r.label,
        String(x.k),
        fmt(x.rate),
        fmt(x.bare),
        fmt(x.rate / x.bare, 2),
        fmt(x.actionsPerSecond),
      ])
  }
  console.log(`\n${table(rows)}\n`)
  for (const r of results) {
    const hundred = r.rows.find((x) => x.k === 100)
    const ratio = hundred.rate / hundred.bare
    console.log(
      `${r.label}: 100 behaviors at ${fmt(ratio, 2)} of the bare loop (target ≥ ${TARGET_RATIO}): ${ratio >= TARGET_RATIO ? 'met' : 'MISSED'}`,
    )
  }
}

const watchdog = setTimeout(
  () => {
    console.error('bench: gave up after the time limit')
    abort(1)
  },
  (300 + (DELIVERIES / 100) * 6) * 1000,
)
watchdog.unref()
main().catch((err) => {
  console.error(`bench failed: ${err instanceof Error ? err.message : err}`)
  process.exitCode = 1
})
