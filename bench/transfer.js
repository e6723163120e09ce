// `npm run bench:transfer`: upload and download of one large file through Wharf's API (the
// Files.com multi-part flow: open the upload, PUT each part to its signed URL, end it; then
// GET /files/{path} and fetch its download_uri), next to a plain Node stream copy of the same
// file on the same disk in the same run, and the server's peak resident memory.
//
// Settings (environment): BENCH_TRANSFER_MB (1024), BENCH_PARALLEL_PARTS (4),
// BENCH_PART_MB (part size the server asks for; default: the server's default, 5 MiB),
// BENCH_DATABASE_URL (also runs against PostgreSQL). BLOB_STORE=s3 measures the S3 store instead,
// in direct and proxy modes against the AWS SDK alone (transfer-s3.js). See docs/performance.md.
import crypto from 'node:crypto'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import {
  abort,
  cleanups,
  cpuSeconds,
  createPgDatabase,
  dropPgDatabase,
  fmt,
  intSetting,
  makeRandomFile,
  memory,
  root,
  runCleanups,
  startWharf,
  stopChild,
  table,
} from './harness.js'
import { agent, apiJson, readJson, request } from './rest-client.js'
import { benchS3 } from './transfer-s3.js'

const MB = intSetting('BENCH_TRANSFER_MB', 1024, 1, 65536)
const PARALLEL = intSetting('BENCH_PARALLEL_PARTS', 4, 1, 64)
const PART_MB = intSetting('BENCH_PART_MB', 0, 0, 5120)
const PG_URL = process.env['BENCH_DATABASE_URL'] || undefined
const TARGET_RATIO = 0.6
const TARGET_RSS_MB = 150

/**
 * Plain Node: a read stream piped into a write stream on the same disk, flushed to disk at the
 * end (`flush`), as Wharf flushes what it stores and the download below flushes what it saves.
 */
async function plainCopy(src, dir) {
  const dst = path.join(dir, `copy-${crypto.randomBytes(4).toString('hex')}.bin`)
  const t = process.hrtime.bigint()
  await pipeline(fs.createReadStream(src.file), fs.createWriteStream(dst, { flush: true }))
  const ms = Number(process.hrtime.bigint() - t) / 1e6
  await fsp.rm(dst)
  return ms
}

/**
 * The Files.com flow the SDKs use: put → (put part N → PUT upload_uri)… → end. `onPhase`
 * (optional) hears of each phase as it starts: parts, end, checksums.
 */
async function upload(w, src, name, onPhase = async () => {}) {
  const rel = `/files/${encodeURIComponent(name)}`
  const pid = w.proc.child.pid
  const cpu0 = await cpuSeconds(pid)
  const t = process.hrtime.bigint()
  await onPhase('parts')
  const first = await apiJson(w, 'POST', rel, { action: 'put' })
  const partSize = first.partsize
  const parts = Math.ceil(src.size / partSize)
  let next = 1
  async function worker() {
    while (next <= parts) {
      const n = next++
      const part = await apiJson(w, 'POST', rel, { action: 'put', part: n, ref: first.ref })
      const start = (n - 1) * partSize
      const end = Math.min(src.size, start + partSize) - 1
      const res = await request(part.upload_uri, {
        method: 'PUT',
        headers: { 'Content-Length': String(end - start + 1) },
        body: fs.createReadStream(src.file, { start, end, highWaterMark: 1024 * 1024 }),
      })
      await readJson(res, `PUT part ${n}`)
    }
  }
  await Promise.all(Array.from({ length: Math.min(PARALLEL, parts) }, worker))
  const tEnd = process.hrtime.bigint()
  const cpu1 = await cpuSeconds(pid)
  await onPhase('end')
  const file = await apiJson(w, 'POST', rel, { action: 'end', ref: first.ref })
  const cpu2 = await cpuSeconds(pid)
  // The end assembles the parts; the checksums are computed afterwards, by a background job.
  const endMs = Number(process.hrtime.bigint() - tEnd) / 1e6
  const ms = Number(process.hrtime.bigint() - t) / 1e6
  if (file.size !== src.size) throw new Error(`uploaded file differs: ${file.size} bytes`)
  // Waited for after the clock stops, so that the job does not run into what is measured next.
  await onPhase('checksums')
  let known = file
  while (known.md5 === null) {
    await new Promise((r) => setTimeout(r, 50))
    known = await apiJson(w, 'GET', rel)
  }
  const sumsMs = Number(process.hrtime.bigint() - tEnd) / 1e6 - endMs
  const cpu3 = await cpuSeconds(pid)
  if (known.md5 !== src.md5) throw new Error(`uploaded file differs: md5 ${known.md5}`)
  // Server CPU seconds: the parts, the end, then the background checksums (the polls included).
  // Steadier than MB/s on a machine that is busy with other work.
  const cpu = { parts: cpu1 - cpu0, end: cpu2 - cpu1, sums: cpu3 - cpu2 }
  return { ms, endMs, sumsMs, cpu, parts, partSize }
}

/** GET /files/{path} for the signed link, then the bytes to a file on the same disk. */
async function download(w, src, name, dir) {
  const dst = path.join(dir, `download-${crypto.randomBytes(4).toString('hex')}.bin`)
  const cpu0 = await cpuSeconds(w.proc.child.pid)
  const t = process.hrtime.bigint()
  const file = await apiJson(w, 'GET', `/files/${encodeURIComponent(name)}`)
  const res = await request(file.download_uri)
  if (res.statusCode !== 200) throw new Error(`download: HTTP ${res.statusCode}`)
  await pipeline(res, fs.createWriteStream(dst, { flush: true }))
  const ms = Number(process.hrtime.bigint() - t) / 1e6
  const cpu = (await cpuSeconds(w.proc.child.pid)) - cpu0
  // Checked after the clock stops: hashing a gigabyte would cost the client as much as saving it.
  const md5 = crypto.createHash('md5')
  await pipeline(fs.createReadStream(dst), md5)
  await fsp.rm(dst)
  if (md5.digest('hex') !== src.md5) throw new Error('downloaded bytes differ from the upload')
  return { ms, cpu }
}

async function main() {
  await fsp.access(path.join(root, 'dist', 'cli.js')).catch(() => {
    throw new Error('dist/cli.js is missing: run `npm run build` first (npm run bench:transfer does)')
  })
  const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'wharf-bench-transfer-'))
  cleanups.push(() => fsp.rm(work, { recursive: true, force: true }))
  console.log(`Wharf transfer benchmark: ${MB} MiB file, ${PARALLEL} parts in flight`)
  console.log(`Node ${process.version}, ${os.cpus().length} CPU(s); ${new Date().toISOString()}\n`)
  const src = await makeRandomFile(work, MB)
  if (process.env['BLOB_STORE'] === 's3') {
    try {
      await benchS3({ src, work, parallel: PARALLEL, partMb: PART_MB, upload, download })
    } finally {
      await runCleanups()
      agent.destroy()
    }
    return
  }
  const env = PART_MB ? { UPLOAD_PART_SIZE: String(PART_MB * 1024 * 1024) } : {}
  const targets = [{ label: 'SQLite' }]
  if (PG_URL) targets.push({ label: 'PostgreSQL', pg: true })
  const rows = [['run', 'MB/s', 'seconds', 'vs plain copy', 'server peak RSS MiB', 'targets']]
  let allOk = true
  const mbps = (ms) => src.size / 1024 / 1024 / (ms / 1000)
  try {
    for (const t of targets) {
      let url
      if (t.pg) {
        const d = await createPgDatabase(PG_URL)
        cleanups.push(() => dropPgDatabase(PG_URL, d.name))
        url = d.url
      }
      const w = await startWharf(`Wharf, ${t.label}`, url, env)
      try {
        const before = await memory(w.proc.child.pid)
        // Plain copies before and after each transfer, so disk-cache drift hits both sides.
        const copy1 = await plainCopy(src, work)
        const up = await upload(w, src, 'bench/large.bin')
        const copy2 = await plainCopy(src, work)
        const down = await download(w, src, 'bench/large.bin', work)
        const copy3 = await plainCopy(src, work)
        const mem = await memory(w.proc.child.pid)
        const copyUp = (copy1 + copy2) / 2
        const copyDown = (copy2 + copy3) / 2
        console.log(
          `  ${t.label}: ${up.parts} parts of ${fmt(up.partSize / 1024 / 1024, 1)} MiB, action=end took ${fmt(up.endMs)} ms, its checksums ${fmt(up.sumsMs / 1000, 1)} s more in the background; server RSS ${fmt(before.now)} MiB at start, peak ${fmt(mem.peak)} MiB`,
        )
        console.log(
          `  ${t.label}: server CPU for the upload ${fmt(up.cpu.parts, 1)} s for the parts, ${fmt(up.cpu.end, 1)} s for action=end, ${fmt(up.cpu.sums, 1)} s after it for the checksums; ${fmt(down.cpu, 1)} s for the download`,
        )
        for (const [what, ms, base] of [
          ['upload', up.ms, copyUp],
          ['download', down.ms, copyDown],
        ]) {
          const ratio = base / ms
          const ok = ratio >= TARGET_RATIO && mem.peak < TARGET_RSS_MB
          allOk &&= ok
          rows.push([
            `${what}, ${t.label}`,
            fmt(mbps(ms)),
            fmt(ms / 1000, 1),
            fmt(ratio, 2),
            fmt(mem.peak),
            ok ? 'met' : 'MISSED',
          ])
        }
        rows.push([
          `plain Node stream copy (mean)`,
          fmt(mbps((copyUp + copyDown) / 2)),
          fmt((copyUp + copyDown) / 2000, 1),
          '1.00',
          '',
          '',
        ])
      } finally {
        await stopChild(w.proc)
      }
    }
    console.log(`\n${table(rows)}\n`)
    console.log(
      `Targets: at least ${TARGET_RATIO * 100}% of the plain copy's MB/s, server peak RSS under ${TARGET_RSS_MB} MiB: ${allOk ? 'met' : 'MISSED'}`,
    )
  } finally {
    await runCleanups()
    agent.destroy()
  }
}

const watchdog = setTimeout(
  () => {
    console.error('bench: gave up after the time limit')
    abort(1)
  },
  (120 + MB * 0.5 * (PG_URL ? 2 : 1)) * 1000,
)
main()
  .catch((err) => {
    console.error(`bench failed: ${err instanceof Error ? err.message : err}`)
    process.exitCode = 1
  })
  .finally(() => clearTimeout(watchdog))
