// `npm run bench`: the cost of Wharf's request path (API key authentication, request limits,
// permission check, the key and its owner read from the database, serialization) measured against
// bare Fastify serving the same JSON body. Both run in their own processes on 127.0.0.1;
// autocannon drives the load.
//
// Settings (environment): BENCH_CONNECTIONS (64), BENCH_DURATION seconds measured per run (15),
// BENCH_WARMUP seconds per target (3), BENCH_DATABASE_URL (adds a PostgreSQL row, in a database
// created and dropped by this run), BENCH_PROFILE=1 (writes a CPU profile of each Wharf process
// to a temporary folder, printed at the end). See docs/performance.md.
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import autocannon from 'autocannon'
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
  root,
  runCleanups,
  startChild,
  startWharf,
  stopChild,
  table,
  waitReady,
} from './harness.js'

const CONNECTIONS = intSetting('BENCH_CONNECTIONS', 64, 1, 1024)
const DURATION = intSetting('BENCH_DURATION', 15, 1, 600)
const WARMUP = intSetting('BENCH_WARMUP', 3, 0, 60)
const ROUNDS = 2
const PG_URL = process.env['BENCH_DATABASE_URL'] || undefined
const TARGET_RATIO = 0.5
const TARGET_P99_MS = 20

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
    if (profilesUsed())
      console.log(
        `CPU profiles of the Wharf processes: ${profilesUsed()} (open in Chrome DevTools or speedscope)`,
      )
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
