import { setTimeout as sleep } from 'node:timers/promises'
import { stringify } from 'csv-stringify/sync'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ExportBuilder } from '../src/exports/export-builder.js'
import { ExportFailure, type ExportJob, type ExportSource } from '../src/exports/export-kind.js'
import { EXPORT_KINDS } from '../src/exports/export-kinds.js'
import { ExportWorker } from '../src/exports/export-worker.js'
import { JobLease } from '../src/jobs/job-lease.js'
import { call, dialects, expectError, type TestServer, useServersPerTest } from './helpers/server.js'

/**
 * The export job machinery with fake record sources: a build that throws ends `failed` with a
 * reason; two workers sharing one database never build the same export; old exports go.
 */

const DAY = 86_400_000
const admin = (s: TestServer) => ({ key: s.adminKey })

/** A made-up webhook-log record, in the result fields' order. */
const logRow = (id: number) => [
  id,
  '2025-01-01T00:00:00Z',
  200,
  'OK',
  'true',
  '{}',
  'POST',
  'u',
  'p',
  '',
  1,
  'Upload',
  0,
  '',
  '{}',
  '',
]

/** A source of `pages` pages of one made-up row each, noting every build it serves. */
function countingSource(builds: number[], pages = 3, pause = 5): ExportSource {
  return {
    async *pages(job: ExportJob) {
      builds.push(job.id)
      for (let i = 0; i < pages; i++) {
        await sleep(pause)
        yield [logRow(job.id * 100 + i)]
      }
    },
  }
}

/** Polls the export until it leaves `building` (bounded); any answer but 200 fails at once. */
const untilBuilt = (s: TestServer, id: number): Promise<any> =>
  vi.waitUntil(
    async () => {
      const r = await call(s, 'GET', `/action_notification_exports/${id}`, admin(s))
      expect(r.status, r.text).toBe(200)
      return r.body.status !== 'building' && r.body
    },
    { timeout: 20_000, interval: 25 },
  )

describe.each(dialects)('export jobs (%s)', (dialect) => {
  // Registered first, so that its close comes after the workers below are stopped.
  const serve = useServersPerTest(dialect)
  const workers: ExportWorker[] = []
  afterEach(async () => {
    for (const w of workers.splice(0)) await w.stop()
  })

  it('writes the webhook log’s CSV byte for byte as csv-stringify would, whatever the fields hold', async () => {
    const s = await serve({ EXPORT_PAGE_SIZE: '2' })
    const siteId = s.container.site.id
    const folder = `csv-${Math.random().toString(36).slice(2, 8)}`
    const n = await s.container.db
      .insertInto('webhook_notifications')
      .values({
        site_id: siteId,
        action_id: null,
        message_id: `msg-${folder}`,
        operation: 'Upload',
        user_id: null,
        username: '',
        protocol: 'restapi',
        path: `${folder}/a`,
        sourcepath: '',
        folder,
        state: 'failed',
        max_attempts: 8,
        next_attempt_at: null,
        lease_owner: null,
        lease_until: null,
        created_at: 0,
        updated_at: 0,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    const awkward = [
      '',
      'plain',
      'a,b',
      'say "hi"',
      'line\nbreak',
      'cr\rhere',
      'crlf\r\nend',
      'trailing\r',
      '{}',
      'héllo ✓',
    ]
    const rows = awkward.map((text, i) => ({
      site_id: siteId,
      notification_id: n.id,
      attempt: i + 1,
      created_at: Date.UTC(2025, 0, 2, 3, 4, 5) + i * 1001,
      user_id: null,
      operation: i % 2 ? 'Create Folder' : text,
      status: i % 3 ? 500 : 28,
      message: text,
      success: i % 2,
      request_headers: i ? JSON.stringify({ 'X-Test': text }) : '{}',
      request_method: 'POST',
      request_url: `https://hooks.example.com/${text}`,
      request_body: text,
      path: `${folder}/${text}`,
      folder,
      response_size: i * 7,
      response_body: text,
      duration_ms: 1,
    }))
    const ids = (
      await s.container.db.insertInto('webhook_attempts').values(rows).returning('id').execute()
    ).map((r) => Number(r.id))
    const made = await call(s, 'POST', '/action_notification_exports', {
      ...admin(s),
      body: { query_folder: folder },
    })
    const e = await untilBuilt(s, made.body.id)
    expect(e.status).toBe('ready')
    const res = await fetch(e.results_url)
    const csv = await res.text()
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(csv)))
    const iso = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z')
    const expected = stringify(
      [
        [...EXPORT_KINDS.webhook_log.columns],
        ...rows.map((r, i) => [
          ids[i],
          iso(r.created_at),
          r.status,
          r.message,
          r.success ? 'true' : 'false',
          r.request_headers,
          r.request_method,
          r.request_url,
          r.path,
          r.folder,
          r.attempt,
          r.operation,
          r.response_size,
          r.response_body,
          r.request_body,
          '',
        ]),
      ],
      { record_delimiter: 'windows', quote_record_delimiter: true },
    )
    expect(csv === expected, `the CSV differs:\n${csv}\n---\n${expected}`).toBe(true)
  })

  it('marks a build that throws failed, with a reason, and refuses its results', async () => {
    let fail: Error = new Error('connection reset by the disk')
    const s = await serve(
      {},
      {
        exportSources: {
          webhook_log: {
            async *pages() {
              yield [logRow(1)]
              throw fail
            },
          },
        },
      },
    )
    const made = await call(s, 'POST', '/action_notification_exports', { ...admin(s), body: {} })
    expect(made.status, made.text).toBe(201)
    const failed = await untilBuilt(s, made.body.id)
    expect(failed.status).toBe('failed')
    expect(failed.results_url).toBeNull()
    // An unexpected error is not described to the client: the reason points at the server log.
    expect(failed.failure_reason).toMatch(
      /^The export could not be built \(error [0-9a-f-]{36} in the server log\)$/,
    )
    expect(failed.failure_reason).not.toContain('disk')
    expectError(
      await call(
        s,
        'GET',
        `/action_notification_export_results?action_notification_export_id=${made.body.id}`,
        admin(s),
      ),
      422,
      'processing-failure/export-failure',
    )
    // A failure the build explains is shown word for word.
    fail = new ExportFailure('The log could not be read')
    const second = await call(s, 'POST', '/action_notification_exports', { ...admin(s), body: {} })
    expect((await untilBuilt(s, second.body.id)).failure_reason).toBe('The log could not be read')
    const row = await s.container.db
      .selectFrom('exports')
      .select(['blob_key', 'lease_owner', 'attempts'])
      .where('id', '=', second.body.id)
      .executeTakeFirstOrThrow()
    expect(row).toEqual({ blob_key: null, lease_owner: null, attempts: 1 })
  })

  it('never lets two workers on one database build the same export', async () => {
    const builds: number[] = []
    const s = await serve(
      { EXPORT_CONCURRENCY: '2' },
      { exportSources: { webhook_log: countingSource(builds) } },
    )
    const otherBuilds: number[] = []
    const other = new ExportWorker(
      s.container.db,
      new ExportBuilder(s.container.blobs, EXPORT_KINDS, { ...sourcesOf(otherBuilds) }, 1000),
      s.container.blobs,
      Date.now,
      { concurrency: 2, leaseMs: 60_000 },
    )
    workers.push(other)
    await other.start()
    const ids: number[] = []
    for (let i = 0; i < 16; i++) {
      const r = await call(s, 'POST', '/action_notification_exports', { ...admin(s), body: {} })
      expect(r.status).toBe(201)
      ids.push(r.body.id)
    }
    for (const id of ids) expect((await untilBuilt(s, id)).status).toBe('ready')
    const all = [...builds, ...otherBuilds].sort((a, b) => a - b)
    expect(all).toEqual(ids)
    expect(builds.length, 'builds of the server’s worker').toBeGreaterThan(0)
    expect(otherBuilds.length, 'builds of the second worker').toBeGreaterThan(0)
    const rows = await s.container.db
      .selectFrom('exports')
      .select(['id', 'attempts', 'result_count'])
      .execute()
    expect(rows.filter((r) => ids.includes(r.id)).map((r) => [r.attempts, r.result_count])).toEqual(
      ids.map(() => [1, 3]),
    )
    // Each export's results are the rows its one build wrote.
    const one = await call(
      s,
      'GET',
      `/action_notification_export_results?action_notification_export_id=${ids[5]}`,
      admin(s),
    )
    expect(one.body.map((r: any) => r.id)).toEqual([0, 1, 2].map((i) => ids[5]! * 100 + i))
  })

  it('deletes exports and queues their files once they are older than EXPORT_RETENTION_DAYS', async () => {
    let shift = 0
    const s = await serve({ EXPORT_RETENTION_DAYS: '7' }, { now: () => Date.now() + shift })
    const old = await call(s, 'POST', '/action_notification_exports', { ...admin(s), body: {} })
    const oldReady = await untilBuilt(s, old.body.id)
    expect(oldReady.status).toBe('ready')
    const { blob_key } = await s.container.db
      .selectFrom('exports')
      .select('blob_key')
      .where('id', '=', old.body.id)
      .executeTakeFirstOrThrow()
    shift = 6 * DAY
    const young = await call(s, 'POST', '/action_notification_exports', { ...admin(s), body: {} })
    expect((await untilBuilt(s, young.body.id)).status).toBe('ready')
    expect(await s.container.exports.retention.runOnce()).toBe(0)
    shift = 7 * DAY + 60_000
    expect(await s.container.exports.retention.runOnce()).toBe(1)
    expectError(
      await call(s, 'GET', `/action_notification_exports/${old.body.id}`, admin(s)),
      404,
      'not-found',
    )
    expect((await call(s, 'GET', `/action_notification_exports/${young.body.id}`, admin(s))).status).toBe(200)
    const garbage = await s.container.db.selectFrom('blob_garbage').select('blob_key').execute()
    expect(garbage.map((g) => g.blob_key)).toContain(blob_key)
    // Its link no longer works (the export is gone, whatever the file's fate).
    shift = 0
    const link = await fetch(oldReady.results_url)
    expect(link.status).toBe(401)
  })

  it('prunes in one process at a time: a pass while another process prunes leaves it the work', async () => {
    let shift = 0
    const now = () => Date.now() + shift
    const s = await serve({ EXPORT_RETENTION_DAYS: '7' }, { now })
    const old = await call(s, 'POST', '/action_notification_exports', { ...admin(s), body: {} })
    expect((await untilBuilt(s, old.body.id)).status).toBe('ready')
    shift = 8 * DAY
    const other = new JobLease(s.container.db, 'export-retention', { leaseMs: 60_000, now })
    const held = await other.hold(async () => {
      expect(await s.container.exports.retention.runOnce()).toBe(0)
      return (await call(s, 'GET', `/action_notification_exports/${old.body.id}`, admin(s))).status
    })
    expect(held).toBe(200)
    expect(await s.container.exports.retention.runOnce()).toBe(1)
    expectError(
      await call(s, 'GET', `/action_notification_exports/${old.body.id}`, admin(s)),
      404,
      'not-found',
    )
  })

  it('hands a claim back when the worker stops mid-build, so the next one starts at once', async () => {
    const builds: number[] = []
    const s = await serve({}, { exportSources: { webhook_log: countingSource(builds, 1000, 5) } })
    const made = await call(s, 'POST', '/action_notification_exports', { ...admin(s), body: {} })
    await expect.poll(() => builds.length, { timeout: 4_000, interval: 10 }).toBeGreaterThan(0)
    expect(builds).toEqual([made.body.id])
    await s.container.exports.worker.stop()
    const row = await s.container.db
      .selectFrom('exports')
      .select(['status', 'lease_owner', 'lease_until', 'blob_key', 'attempts'])
      .where('id', '=', made.body.id)
      .executeTakeFirstOrThrow()
    // Not counted as an attempt: only builds cut short by a crash are.
    expect(row).toEqual({
      status: 'building',
      lease_owner: null,
      lease_until: null,
      blob_key: null,
      attempts: 0,
    })
  })
})

function sourcesOf(builds: number[]) {
  const source = countingSource(builds)
  return { webhook_log: source, history: source }
}

describe('an export build stopped before it began', () => {
  it('stops with the stop’s reason and never asks its source for a page', async () => {
    const builds: number[] = []
    const source = countingSource(builds)
    // No store: a build that went on would fail on it with another error than the stop's.
    const builder = new ExportBuilder({} as never, EXPORT_KINDS, { webhook_log: source, history: source }, 10)
    const stop = new AbortController()
    const reason = new Error('the server is stopping')
    stop.abort(reason)
    const job: ExportJob = { id: 7, site_id: 1, kind: 'webhook_log', query: {}, start_at: null, end_at: null }
    await expect(builder.build(job, stop.signal, 'k'.repeat(32))).rejects.toBe(reason)
    expect(builds).toEqual([])
  })
})
