// `npm run bench:shares`: what an outsider's side of a share link costs.
//
// 1. A 1 GiB file downloaded through a share link (register, ask for the file, fetch its
//    download_uri) next to the same file downloaded through the REST API, alternately, in the
//    same run: the share link at ≥ 0.9 of REST's throughput.
// 2. A ZIP of a shared folder of 1,000 files totalling 1 GiB, streamed (POST …/zip, then its
//    link): ≥ 0.7 of the REST download's throughput, the server's resident memory under 150 MiB
//    while it streams, and the first byte within 1 s of the request.
// 3. 1,000 share links of one user, 100,000 downloads logged: `GET /bundle_downloads` of one link
//    with 20,000 of them, page 100 (by cursor, 100 a page) at most 1.5× the time of page 1.
//
// Settings (environment): BENCH_SHARE_MB (1024: the big file and the ZIP's total),
// BENCH_ZIP_FILES (1000), BENCH_DATABASE_URL (also runs against PostgreSQL).
// See docs/performance.md, "Running the benchmarks".
import crypto from 'node:crypto'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import {
  abort,
  cleanups,
  createPgDatabase,
  dropPgDatabase,
  fmt,
  intSetting,
  makeRandomFile,
  memory,
  phasedRss,
  profilesUsed,
  root,
  runCleanups,
  startWharf,
  stopChild,
  table,
} from './harness.js'
import { agent, apiJson, request, uploadFile } from './rest-client.js'
import { openDatabase } from './webhook-backlog.js'

const MB = intSetting('BENCH_SHARE_MB', 1024, 1, 65536)
const ZIP_FILES = intSetting('BENCH_ZIP_FILES', 1000, 1, 100_000)
const PG_URL = process.env['BENCH_DATABASE_URL'] || undefined
const TARGET_SHARE = 0.9
const TARGET_ZIP = 0.7
const TARGET_RSS_MB = 150
const TARGET_FIRST_BYTE_MS = 1000
const TARGET_DEEP_PAGE = 1.5
const BUNDLES = 1000
const DOWNLOADS = 100_000
const MEASURED_DOWNLOADS = 20_000
const PAGE = 100

/**
 * Saves a response's body to a file on the same disk (flushed), as the transfer benchmark does;
 * `firstByte`: ms from `since` (hrtime) to its first byte.
 */
async function save(res, dir, since = process.hrtime.bigint()) {
  const dst = path.join(dir, `dl-${crypto.randomBytes(4).toString('hex')}`)
  let firstByte = null
  const t = since
  res.once('data', () => {
    firstByte = Number(process.hrtime.bigint() - t) / 1e6
  })
  await pipeline(res, fs.createWriteStream(dst, { flush: true }))
  return { dst, firstByte }
}

async function md5Of(file) {
  const h = crypto.createHash('md5')
  await pipeline(fs.createReadStream(file), h)
  return h.digest('hex')
}

/** REST: GET /files/{path} for its link, then the bytes. */
async function restDownload(w, name, dir) {
  const t = process.hrtime.bigint()
  const file = await apiJson(w, 'GET', `/files/${encodeURIComponent(name)}`)
  const res = await request(file.download_uri)
  if (res.statusCode !== 200) throw new Error(`REST download: HTTP ${res.statusCode}`)
  const { dst } = await save(res, dir)
  return { ms: Number(process.hrtime.bigint() - t) / 1e6, dst }
}

/** A visitor: the file through the share link (registration included in the time). */
async function shareDownload(w, code, rel, dir) {
  const t = process.hrtime.bigint()
  const reg = await apiJson(w, 'POST', `/public/bundles/${code}/registrations`, {}, { anonymous: true })
  const file = await apiJson(w, 'GET', `/public/bundles/${code}/files/${rel}`, undefined, {
    anonymous: true,
    headers: { 'X-Bundle-Registration-Code': reg.code },
  })
  const res = await request(file.download_uri)
  if (res.statusCode !== 200) throw new Error(`share download: HTTP ${res.statusCode}`)
  const { dst } = await save(res, dir)
  return { ms: Number(process.hrtime.bigint() - t) / 1e6, dst }
}

/** A visitor: the whole shared folder as one ZIP; time, first byte and the server's memory. */
async function zipDownload(w, code, folder, dir) {
  const rss = phasedRss(w.proc.child.pid)
  await rss.phase('zip')
  const t = process.hrtime.bigint()
  const reg = await apiJson(w, 'POST', `/public/bundles/${code}/registrations`, {}, { anonymous: true })
  const headers = { 'X-Bundle-Registration-Code': reg.code }
  // The first byte is timed from the request for the ZIP's link: a visitor's click asks for both.
  const asked = process.hrtime.bigint()
  const link = await apiJson(
    w,
    'POST',
    `/public/bundles/${code}/zip`,
    { paths: [folder] },
    { anonymous: true, headers },
  )
  const res = await request(link.download_uri)
  if (res.statusCode !== 200) throw new Error(`ZIP download: HTTP ${res.statusCode}`)
  const { dst, firstByte } = await save(res, dir, asked)
  const ms = Number(process.hrtime.bigint() - t) / 1e6
  const most = (await rss.stop()).get('zip')
  const size = (await fsp.stat(dst)).size
  return { ms, firstByte: firstByte ?? ms, most, size, dst }
}

/** 1,000 links of one user, and 100,000 downloads logged, MEASURED_DOWNLOADS of them on `measured`. */
async function fillDownloads(w, url, userId, measured) {
  const db = openDatabase(w, url)
  try {
    const [bundle] = await db.all('select site_id from bundles where id = $1', [measured])
    const siteId = Number(bundle.site_id)
    const now = Date.now()
    const ids = [measured]
    // The other links: rows as the API writes them (a code each; no paths needed to be listed).
    for (let i = 1; i < BUNDLES; i++) {
      const code = crypto.randomBytes(16).toString('hex')
      const [row] = await db.all(
        `insert into bundles (site_id, user_id, code, code_lower, permissions, created_at, updated_at)
         values ($1, $2, $3, $4, 'read', $5, $6) returning id`,
        [siteId, userId, code, code, now, now],
      )
      ids.push(Number(row.id))
    }
    const regs = new Map()
    for (const id of ids) {
      const hash = crypto.randomBytes(32).toString('hex')
      const [r] = await db.all(
        `insert into bundle_registrations (site_id, bundle_id, code_hash, code_start, created_at)
         values ($1, $2, $3, $4, $5) returning id`,
        [siteId, id, hash, hash.slice(0, 6), now],
      )
      regs.set(id, Number(r.id))
    }
    const rows = []
    for (let i = 0; i < DOWNLOADS; i++) {
      const id = i < MEASURED_DOWNLOADS ? measured : ids[1 + (i % (ids.length - 1))]
      rows.push([siteId, id, regs.get(id), `shared/file-${i % 1000}.bin`, 'file', now + i])
    }
    const per = 500
    for (let i = 0; i < rows.length; i += per) {
      const chunk = rows.slice(i, i + per)
      const slots = chunk.map(
        (_, j) =>
          `($${j * 6 + 1}, $${j * 6 + 2}, $${j * 6 + 3}, $${j * 6 + 4}, $${j * 6 + 5}, $${j * 6 + 6})`,
      )
      await db.all(
        `insert into bundle_downloads (site_id, bundle_id, bundle_registration_id, path, download_method, created_at)
         values ${slots.join(', ')} returning id`,
        chunk.flat(),
      )
    }
    // PostgreSQL's autovacuum would soon gather the new rows' statistics; the planner has none yet.
    if (url) await db.all('analyze')
  } finally {
    await db.close()
  }
}

/** Median time of `GET /bundle_downloads` for page 1 and for page 100 (its cursor found first). */
async function pageTimes(w, bundleId) {
  const list = (cursor) =>
    `/bundle_downloads?bundle_id=${bundleId}&per_page=${PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
  let cursor = null
  for (let page = 1; page < 100; page++) {
    const res = await request(`${w.api}${list(cursor)}`, { headers: w.headers })
    for await (const _ of res);
    cursor = res.headers['x-files-cursor-next']
    if (!cursor) throw new Error(`no page ${page + 1} of the downloads`)
  }
  const timed = async (c) => {
    const t = process.hrtime.bigint()
    const res = await request(`${w.api}${list(c)}`, { headers: w.headers })
    let body = ''
    for await (const chunk of res) body += chunk
    if (res.statusCode !== 200 || JSON.parse(body).length !== PAGE)
      throw new Error(`page: HTTP ${res.statusCode}`)
    return Number(process.hrtime.bigint() - t) / 1e6
  }
  const first = []
  const deep = []
  for (let i = 0; i < 60; i++) {
    first.push(await timed(null))
    deep.push(await timed(cursor))
  }
  const median = (a) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)]
  // The first rounds warm the route's compiled schema and the database's cache.
  return { first: median(first.slice(10)), deep: median(deep.slice(10)) }
}

async function main() {
  await fsp.access(path.join(root, 'dist', 'cli.js')).catch(() => {
    throw new Error('dist/cli.js is missing: run `npm run build` first (npm run bench:shares does)')
  })
  const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'wharf-bench-shares-'))
  cleanups.push(() => fsp.rm(work, { recursive: true, force: true }))
  console.log(
    `Wharf share-link benchmark: a ${MB} MiB file, and ${ZIP_FILES} files of about ${MB} MiB in all as a ZIP`,
  )
  console.log(`Node ${process.version}, ${os.cpus().length} CPU(s); ${new Date().toISOString()}\n`)
  const folder = async (name) => {
    const dir = path.join(work, name)
    await fsp.mkdir(dir)
    return dir
  }
  const big = await makeRandomFile(await folder('big'), MB)
  const small = await makeRandomFile(await folder('small'), Math.max(1, Math.round(MB / ZIP_FILES)))
  const targets = [{ label: 'SQLite' }]
  if (PG_URL) targets.push({ label: 'PostgreSQL', pg: true })
  const rows = [
    [
      'run',
      'REST MB/s',
      'share MB/s',
      'share/REST',
      'ZIP MB/s',
      'ZIP/REST',
      'ZIP first byte ms',
      'RSS during ZIP MiB',
      'page 100/page 1',
      'targets',
    ],
  ]
  let allOk = true
  const mbps = (bytes, ms) => bytes / 1024 / 1024 / (ms / 1000)
  try {
    for (const t of targets) {
      let url
      if (t.pg) {
        const d = await createPgDatabase(PG_URL)
        cleanups.push(() => dropPgDatabase(PG_URL, d.name))
        url = d.url
      }
      const w = await startWharf(`Wharf, ${t.label}`, url)
      try {
        await uploadFile(w, big.file, 'shared/big.bin')
        for (let i = 0; i < ZIP_FILES; i++) await uploadFile(w, small.file, `shared/many/file-${i}.bin`)
        const link = await apiJson(w, 'POST', '/bundles', { paths: ['shared'], permissions: 'read' })
        // Alternately, so that the disk cache's drift falls on both.
        const rest = []
        const share = []
        for (let i = 0; i < 2; i++) {
          const r = await restDownload(w, 'shared/big.bin', work)
          if (i === 0 && (await md5Of(r.dst)) !== big.md5) throw new Error('REST download differs')
          await fsp.rm(r.dst)
          rest.push(r.ms)
          const s = await shareDownload(w, link.code, 'shared/big.bin', work)
          if (i === 0 && (await md5Of(s.dst)) !== big.md5) throw new Error('share download differs')
          await fsp.rm(s.dst)
          share.push(s.ms)
        }
        const restMs = rest.reduce((a, b) => a + b) / rest.length
        const shareMs = share.reduce((a, b) => a + b) / share.length
        const zip = await zipDownload(w, link.code, 'shared/many', work)
        await fsp.rm(zip.dst)
        const me = await apiJson(w, 'GET', '/api_key')
        await fillDownloads(w, url, me.user_id, link.id)
        const pages = await pageTimes(w, link.id)
        const mem = await memory(w.proc.child.pid)
        const shareRatio = restMs / shareMs
        const zipRatio = mbps(zip.size, zip.ms) / mbps(big.size, restMs)
        const deepRatio = pages.deep / pages.first
        const missed = []
        if (shareRatio < TARGET_SHARE) missed.push(`share ${fmt(shareRatio, 2)} < ${TARGET_SHARE}`)
        if (zipRatio < TARGET_ZIP) missed.push(`ZIP ${fmt(zipRatio, 2)} < ${TARGET_ZIP}`)
        if (zip.most > TARGET_RSS_MB) missed.push(`RSS ${fmt(zip.most)} ≥ ${TARGET_RSS_MB} MiB`)
        if (zip.firstByte > TARGET_FIRST_BYTE_MS) missed.push(`first byte ${fmt(zip.firstByte)} ms`)
        if (deepRatio > TARGET_DEEP_PAGE) missed.push(`page 100 ${fmt(deepRatio, 2)}x`)
        if (missed.length) allOk = false
        console.log(
          `  ${t.label}: page 1 ${fmt(pages.first, 1)} ms, page 100 ${fmt(pages.deep, 1)} ms (medians); ZIP ${fmt(zip.size / 1024 / 1024)} MiB; server peak RSS ${fmt(mem.peak)} MiB over the run`,
        )
        rows.push([
          `Wharf, ${t.label}`,
          fmt(mbps(big.size, restMs)),
          fmt(mbps(big.size, shareMs)),
          fmt(shareRatio, 2),
          fmt(mbps(zip.size, zip.ms)),
          fmt(zipRatio, 2),
          fmt(zip.firstByte),
          fmt(zip.most),
          fmt(deepRatio, 2),
          missed.length ? `MISSED: ${missed.join('; ')}` : 'met',
        ])
      } finally {
        await stopChild(w.proc)
      }
    }
  } finally {
    await runCleanups()
    agent.destroy()
  }
  console.log()
  console.log(table(rows))
  console.log(
    `\ntargets: share link ≥ ${TARGET_SHARE} of REST; ZIP ≥ ${TARGET_ZIP} of REST, RSS < ${TARGET_RSS_MB} MiB while it streams, first byte < ${TARGET_FIRST_BYTE_MS} ms; page 100 ≤ ${TARGET_DEEP_PAGE}x page 1`,
  )
  if (profilesUsed()) console.log(`CPU profiles: ${profilesUsed()}`)
  if (!allOk) process.exitCode = 1
}

main().catch((err) => {
  console.error(err)
  abort(1)
})
