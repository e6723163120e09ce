import { Readable } from 'node:stream'
import { describe, expect, it, vi } from 'vitest'
import { FileExpiry } from '../src/modules/files/file-expiry.js'
import { findRow } from './helpers/file-rows.js'
import { download, target, uploaded } from './helpers/files.js'
import { call, dialects, useServer } from './helpers/server.js'

const DAY = 86_400_000
const FILES = 100_000
const FOLDERS = 100
const WITH_BLOBS = 500
const BATCH = 1000

/**
 * Retention at scale: 100,000 expired files (seeded straight into the database; 500 of them with
 * real bytes) deleted in batches while uploads go on into the same folders, some replacing files
 * the job is about to delete. Nothing uploaded is lost, every expired file goes once with one
 * Action, and the bytes go with the janitor.
 */
describe.each(dialects)('retention of 100,000 files during uploads (%s)', (dialect) => {
  let clock = Date.now()
  const s = useServer(dialect, { FILE_EXPIRATION_BATCH_SIZE: String(BATCH) }, { now: () => clock })

  it('deletes them in batches, keeps every upload, records each deletion once', {
    timeout: 900_000,
  }, async () => {
    const siteId = s.container.site.id
    const stored = clock - 40 * DAY
    const folderRow = (path: string) => ({
      site_id: siteId,
      path,
      path_lower: path,
      parent_lower: path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '',
      name: path.slice(path.lastIndexOf('/') + 1),
      type: 'directory' as const,
      size: 0,
      custom_metadata: '{}',
      created_at: stored,
      mtime: stored,
    })
    await s.container.db
      .insertInto('files')
      .values([folderRow('bulk'), ...Array.from({ length: FOLDERS }, (_, d) => folderRow(`bulk/d${d}`))])
      .execute()
    const pathOf = (i: number) => `bulk/d${i % FOLDERS}/f${i}.bin`
    const blobKeys: string[] = []
    for (let i = 0; i < WITH_BLOBS; i++) {
      blobKeys.push((await s.container.blobs.put(Readable.from([Buffer.from(`old ${i}`)]))).key)
    }
    for (let start = 0; start < FILES; start += 1000) {
      const rows = []
      for (let i = start; i < start + 1000; i++) {
        const path = pathOf(i)
        rows.push({
          ...folderRow(path),
          type: 'file' as const,
          size: i < WITH_BLOBS ? 5 : 0,
          blob_key: i < WITH_BLOBS ? blobKeys[i]! : null,
        })
      }
      await s.container.db.insertInto('files').values(rows).execute()
    }
    const r = await call(s, 'POST', '/behaviors', {
      key: s.adminKey,
      body: { path: 'bulk', behavior: 'file_expiration', value: { days_to_retain: 30 }, recursive: true },
    })
    expect(r.status, r.text).toBe(201)

    const batches = vi.spyOn(FileExpiry.prototype, 'deleteFiles')
    let running = true
    let duringRun = 0
    const uploads: string[] = []
    // New files and replacements of expired ones (the last ones the job reaches, and some early),
    // one after another until the pass ends.
    const uploading = (async () => {
      for (let n = 0; running; n++) {
        const path = n % 2 === 0 ? `bulk/d${n % FOLDERS}/new-${n}.txt` : pathOf(FILES - 1 - n * 7)
        await uploaded(s, path, `uploaded ${n}`)
        uploads.push(path)
        if (running) duringRun++
      }
    })()
    const report = await s.container.fileExpiration.runOnce()
    running = false
    await uploading
    const calls = batches.mock.calls.map((c) => c[1].length)
    batches.mockRestore()

    expect(duringRun).toBeGreaterThan(0)
    expect(calls.length).toBeGreaterThanOrEqual(FILES / BATCH)
    for (const n of calls) expect(n).toBeLessThanOrEqual(BATCH)
    // Every upload is there with its bytes.
    for (const path of uploads) {
      const row = await findRow(s, path)
      expect(row?.mtime, path).toBe(clock)
      const got = await download(target(s), path)
      expect(got.toString().startsWith('uploaded '), path).toBe(true)
    }
    // Of the seeded files only those replaced meanwhile remain; each other one went with one Action.
    const left = await s.container.db
      .selectFrom('files')
      .select('path')
      .where('site_id', '=', siteId)
      .where('type', '=', 'file')
      .execute()
    const uploadedSet = new Set(uploads)
    expect(left.filter((f) => !uploadedSet.has(f.path))).toEqual([])
    const actions = await s.container.db
      .selectFrom('actions')
      .select('path')
      .where('action', '=', 'destroy')
      .where('username', '=', 'Wharf')
      .execute()
    const deleted = new Set(actions.map((a) => a.path))
    expect(deleted.size).toBe(actions.length)
    expect(report.files).toBe(actions.length)
    for (let i = 0; i < FILES; i++) {
      const path = pathOf(i)
      if (!deleted.has(path) && !uploadedSet.has(path))
        throw new Error(`${path} was neither deleted nor uploaded`)
    }
    expect(actions.length).toBeGreaterThan(FILES - uploads.length - 1)

    // The bytes of the deleted files go with the janitor's next run past its grace period.
    clock += 2 * 3600_000
    await s.container.janitor.runOnce()
    for (const key of blobKeys) expect(await s.container.blobs.size(key)).toBeNull()
  })
})
