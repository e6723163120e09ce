// `node bench/retention.js` (after `npm run build`): files deleted per second by the retention of
// file_expiration behaviors. BENCH_FILES expired files (100,000) are written straight into a fresh
// database, spread over BENCH_FOLDERS folders (100) under one recursive behavior, a share of them
// with bytes in the blob store; then one pass of the job runs, in this process, on Wharf's own
// container from dist (the same job every node runs in the background), and is timed: each
// deletion is one Action (and its webhook notification when a listener is set) in its batch's
// transaction. The blobs are left to the janitor and are not part of the time.
//
// Settings (environment): BENCH_FILES, BENCH_FOLDERS, BENCH_BLOBS (files with bytes, 1,000),
// BENCH_BATCH (FILE_EXPIRATION_BATCH_SIZE, 500), BENCH_DATABASE_URL (adds a PostgreSQL run, in a
// database created and dropped by this run; `--pg` takes TEST_DATABASE_URL instead).
// See docs/performance.md, "Running the benchmarks".
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { createPgDatabase, dropPgDatabase, fmt, intSetting, root, table } from './harness.js'

const FILES = intSetting('BENCH_FILES', 100_000, 1, 100_000_000)
const FOLDERS = intSetting('BENCH_FOLDERS', 100, 1, 1_000_000)
const BLOBS = intSetting('BENCH_BLOBS', 1000, 0, 1_000_000)
const BATCH = intSetting('BENCH_BATCH', 500, 1, 10_000)
const PG_URL =
  process.env['BENCH_DATABASE_URL'] ||
  (process.argv.includes('--pg') ? process.env['TEST_DATABASE_URL'] : undefined) ||
  undefined
const DAY = 86_400_000

const { loadConfig } = await import(path.join(root, 'dist/config.js'))
const { createContainer } = await import(path.join(root, 'dist/container.js'))

/** One run on one database: seed, one timed pass, the figures. */
async function run(label, databaseUrl) {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-bench-retention-'))
  const config = loadConfig({
    DATA_DIR: dataDir,
    ADMIN_USERNAME: 'admin',
    ADMIN_PASSWORD: 'admin-password-1',
    LOG_LEVEL: 'silent',
    FILE_EXPIRATION_BATCH_SIZE: String(BATCH),
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  })
  const container = await createContainer(config)
  try {
    const { db } = container
    const siteId = container.site.id
    const stored = Date.now() - 40 * DAY
    const row = (p, type, blobKey = null) => ({
      site_id: siteId,
      path: p,
      path_lower: p.toLowerCase(),
      parent_lower: p.includes('/') ? p.slice(0, p.lastIndexOf('/')).toLowerCase() : '',
      name: p.slice(p.lastIndexOf('/') + 1),
      type,
      size: blobKey ? 16 : 0,
      blob_key: blobKey,
      custom_metadata: '{}',
      created_at: stored,
      mtime: stored,
    })
    const seedStart = Date.now()
    const folders = [row('expiring', 'directory')]
    for (let d = 0; d < FOLDERS; d++) folders.push(row(`expiring/d${d}`, 'directory'))
    for (let i = 0; i < folders.length; i += 500)
      await db
        .insertInto('files')
        .values(folders.slice(i, i + 500))
        .execute()
    const keys = []
    for (let i = 0; i < Math.min(BLOBS, FILES); i++) {
      keys.push((await container.blobs.put(Readable.from([Buffer.from(`old bytes ${i}`)]))).key)
    }
    const CHUNK = 1000
    for (let start = 0; start < FILES; start += CHUNK) {
      const rows = []
      for (let i = start; i < Math.min(FILES, start + CHUNK); i++) {
        rows.push(row(`expiring/d${i % FOLDERS}/report-${i}.csv`, 'file', keys[i] ?? null))
      }
      await db.insertInto('files').values(rows).execute()
    }
    const now = Date.now()
    await db
      .insertInto('behaviors')
      .values({
        site_id: siteId,
        path: 'expiring',
        path_lower: 'expiring',
        behavior: 'file_expiration',
        value: JSON.stringify({ days_to_retain: 30, delete_empty_folders: false }),
        name: null,
        description: null,
        recursive: 1,
        disable_parent_folder_behavior: 0,
        created_at: now,
        updated_at: now,
      })
      .execute()
    const seeded = (Date.now() - seedStart) / 1000

    const started = process.hrtime.bigint()
    const report = await container.fileExpiration.runOnce()
    const seconds = Number(process.hrtime.bigint() - started) / 1e9
    const left = await db
      .selectFrom('files')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('type', '=', 'file')
      .executeTakeFirstOrThrow()
    if (report.files !== FILES || Number(left.n) !== 0) {
      throw new Error(`expected ${FILES} files deleted, got ${report.files} (${left.n} left)`)
    }
    return [label, fmt(FILES), fmt(BATCH), fmt(seeded, 1), fmt(seconds, 1), fmt(FILES / seconds)]
  } finally {
    await container.close()
    await fs.rm(dataDir, { recursive: true, force: true })
  }
}

const rows = [['database', 'files', 'batch', 'seed s', 'pass s', 'files deleted/s']]
rows.push(await run('SQLite', undefined))
if (PG_URL) {
  const created = await createPgDatabase(PG_URL)
  try {
    rows.push(await run('PostgreSQL', created.url))
  } finally {
    await dropPgDatabase(PG_URL, created.name)
  }
}
console.log(`\nRetention: one pass of file_expiration over ${fmt(FILES)} expired files\n`)
console.log(table(rows))
