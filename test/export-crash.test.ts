import fs from 'node:fs/promises'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { ExportBuilder } from '../src/exports/export-builder.js'
import type { ExportSource } from '../src/exports/export-kind.js'
import { EXPORT_KINDS } from '../src/exports/export-kinds.js'
import { ExportWorker } from '../src/exports/export-worker.js'
import { s3ForTests, storeSettings } from './helpers/s3-cases.js'
import { call, dialects, useServerEach } from './helpers/server.js'
import { queuedBlobKeys, storedBlobKeys, watchStore } from './helpers/storage.js'

/**
 * An export's CSV file is written before the transaction that records the export ready. A
 * process that dies right after the store wrote it must leave nothing behind that the janitor
 * does not delete, on either store, and a ready export must keep its file.
 */
const HOUR = 3600_000

const s3 = s3ForTests()

const stores = storeSettings(s3, 'export-crash', 'direct')

/**
 * The two ways a build writes its file: the webhook log streamed a page at a time (putUnhashed),
 * history as two halves written side by side (putSegments). Fake records, and the CSV they make.
 */
const kinds = [
  { kind: 'webhook log', route: '/action_notification_exports', write: 'putUnhashed' },
  { kind: 'history', route: '/history_exports', write: 'putSegments' },
] as const

const sources: Record<'webhook_log' | 'history', ExportSource> = {
  webhook_log: {
    async *pages(job) {
      yield [
        [job.id, 'a'],
        [job.id, 'b'],
      ]
    },
  },
  history: {
    // Never read: the halves are written instead.
    async *pages() {
      yield* []
      throw new Error('the halves are written instead')
    },
    async halves(job, _pageSize, _signal, header) {
      return {
        async write(files) {
          await fs.writeFile(files[0]!, Buffer.concat([header, Buffer.from(`${job.id},first\r\n`)]))
          await fs.writeFile(files[1]!, `${job.id},second\r\n`)
          return 2
        },
      }
    },
  },
}

/** What writing an export's file does besides its own work: nothing, or something run after it. */
interface AfterWrite {
  run: ((key: string) => Promise<void>) | null
  /** The key of every file written, in order, and the method that wrote it. */
  keys: string[]
  methods: string[]
}

describe.each(
  dialects.flatMap((dialect) => stores.flatMap((s) => kinds.map((k) => ({ dialect, ...s, ...k })))),
)('a crash in an export build ($dialect, $store, $kind)', ({ dialect, env, route, write }) => {
  let clock: number
  const after: AfterWrite = { run: null, keys: [], methods: [] }

  beforeEach(() => {
    clock = Date.now()
    after.run = null
    after.keys = []
    after.methods = []
  })
  const s = useServerEach(dialect, env, {
    now: () => clock,
    exportSources: sources,
    // Once the store wrote an export's file, `after.run`.
    wrapBlobStore: watchStore(['putUnhashed', 'putSegments'], {
      after: async (method, key) => {
        after.keys.push(key)
        after.methods.push(method)
        await after.run?.(key)
      },
    }),
  })

  const blobs = () => s.container.blobs
  const stored = () => storedBlobKeys(s.container.config, (b, prefix) => s3.server.keys(b, prefix))
  const queued = () => queuedBlobKeys(s.container.db)
  const janitor = async () => (await s.container.janitor.runOnce()).garbageDeleted
  const exportRow = (id: number) =>
    s.container.db
      .selectFrom('exports')
      .select(['status', 'blob_key', 'attempts'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
  /** A new export, once it has left `building`. */
  const built = async (): Promise<any> => {
    const made = await call(s, 'POST', route, { key: s.adminKey, body: {} })
    expect(made.status, made.text).toBe(201)
    return vi.waitUntil(
      async () => {
        const r = await call(s, 'GET', `${route}/${made.body.id}`, { key: s.adminKey })
        expect(r.status, r.text).toBe(200)
        return r.body.status !== 'building' && r.body
      },
      { timeout: 20_000, interval: 25 },
    )
  }
  const csvOf = async (e: any) => {
    const res = await fetch(e.results_url)
    expect(res.status).toBe(200)
    return res.text()
  }

  it(`leaves a file written (${write}) just before the process died to the janitor`, async () => {
    // Nothing of the build after the store wrote the file runs: the process is gone as far as
    // the database knows. What the queue held at that moment is what a crash would leave.
    let queuedThen: string[] = []
    after.run = async () => {
      queuedThen = await queued()
      throw new Error('process died')
    }
    const failed = await built()
    expect(failed.status).toBe('failed')
    expect(after.keys).toHaveLength(1)
    const orphan = after.keys[0]!
    expect(queuedThen).toEqual([orphan])
    expect(await blobs().size(orphan)).not.toBeNull()
    expect((await exportRow(failed.id)).blob_key).toBeNull()

    expect(await janitor()).toBe(0)
    clock += 2 * HOUR
    expect(await janitor()).toBe(1)
    expect(await blobs().size(orphan)).toBeNull()
    expect(await stored()).toEqual([])

    // A build that records its export takes its file off the queue: the janitor leaves it.
    after.run = null
    const ready = await built()
    expect(ready.status).toBe('ready')
    const file = after.keys[1]!
    expect((await exportRow(ready.id)).blob_key).toBe(file)
    expect(await queued()).toEqual([])
    clock += 2 * HOUR
    expect(await janitor()).toBe(0)
    expect(await stored()).toEqual([file])
    expect(await csvOf(ready)).toContain(`${ready.id},`)
    expect(after.methods).toEqual([write, write])
  })

  it(`builds again an export whose file (${write}) the janitor collected before it was recorded`, async () => {
    // The process stalls for two hours right after writing the file, and the janitor runs meanwhile.
    after.run = async () => {
      after.run = null
      clock += 2 * HOUR
      expect(await janitor()).toBe(1)
    }
    const ready = await built()
    expect(ready.status).toBe('ready')
    expect(after.keys).toHaveLength(2)
    const [collected, file] = after.keys as [string, string]
    const row = await exportRow(ready.id)
    expect(row).toEqual({ status: 'ready', blob_key: file, attempts: 2 })
    expect(await blobs().size(collected)).toBeNull()
    // Queued again all the same: the janitor may have run before the file appeared.
    expect(await queued()).toEqual([collected])
    clock += 2 * HOUR
    expect(await janitor()).toBe(1)
    expect(await stored()).toEqual([file])
    expect(await csvOf(ready)).toContain(`${ready.id},`)
  })
})

describe.each(dialects)('a build longer than the janitor’s hour (%s)', (dialect) => {
  let clock = 0
  beforeEach(() => {
    clock = Date.now()
  })
  const s = useServerEach(dialect, {}, { now: () => clock })
  const workers: ExportWorker[] = []
  afterEach(async () => {
    for (const w of workers.splice(0)) await w.stop()
  })

  it('keeps its queue row fresh, so the janitor never collects the file under it', async () => {
    // A worker of its own, whose lease is renewed every 50 ms while the build's clock races on.
    await s.container.exports.worker.stop()
    const janitor = async () => (await s.container.janitor.runOnce()).garbageDeleted
    /** Resolves once a lease renewal has restarted the janitor's hour of the file being written. */
    const touchedNow = () =>
      vi.waitUntil(
        async () => {
          const queued = await s.container.db.selectFrom('blob_garbage').select('created_at').execute()
          return queued.length > 0 && queued.every((q) => q.created_at === clock)
        },
        { timeout: 20_000, interval: 10 },
      )
    const slow: ExportSource = {
      async *pages(job) {
        for (let i = 0; i < 8; i++) {
          // Ten minutes pass per page, the janitor runs, and a lease renewal touches the file.
          clock += 10 * 60_000
          expect(await janitor()).toBe(0)
          await touchedNow()
          yield [[job.id, i]]
        }
      },
    }
    const worker = new ExportWorker(
      s.container.db,
      new ExportBuilder(s.container.blobs, EXPORT_KINDS, { webhook_log: slow, history: slow }, 1000),
      s.container.blobs,
      () => clock,
      { concurrency: 1, leaseMs: 150 },
    )
    workers.push(worker)
    await worker.start()
    const made = await call(s, 'POST', '/action_notification_exports', { key: s.adminKey, body: {} })
    expect(made.status, made.text).toBe(201)
    const row = await vi.waitUntil(
      async () => {
        const r = await s.container.db
          .selectFrom('exports')
          .select(['status', 'blob_key', 'attempts'])
          .where('id', '=', made.body.id)
          .executeTakeFirstOrThrow()
        return r.status !== 'building' && r
      },
      { timeout: 20_000, interval: 25 },
    )
    // Built once, 80 minutes long, and its file kept.
    expect(row).toMatchObject({ status: 'ready', attempts: 1 })
    expect(await s.container.blobs.size(row.blob_key!)).not.toBeNull()
    expect(await s.container.db.selectFrom('blob_garbage').selectAll().execute()).toEqual([])
  })
})
