import crypto from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { ExportFailure, type ExportSource } from '../src/exports/export-kind.js'
import { webhookLogSource } from '../src/exports/webhook-log-export.js'
import { dialects, expectError, useServer } from './helpers/server.js'
import {
  createExport,
  expectCsvMatches,
  expectedResult,
  getExport,
  getResults,
  insertExportRow,
  pollExport,
  seedLog,
  walkResults,
} from './helpers/webhook-log-fixtures.js'

/**
 * An export's life: building (results refused until ready), ready, failed (with a reason), and a
 * build whose worker died, finished by another. The server reads the log through a source the
 * test controls: the real one, except for exports of the folders named below.
 */

const tag = (p: string) => `${p}-${crypto.randomBytes(4).toString('hex')}`

describe.each(dialects)('webhook-log exports: building, ready, failed (%s)', (dialect) => {
  /** Builds of a folder in here wait until its gate opens. */
  const gates = new Map<string, { opened: Promise<void>; open: () => void }>()
  const admin = () => ({ key: s.adminKey })

  const source: ExportSource = {
    async *pages(job, pageSize, signal) {
      const folder = String(job.query['query_folder'] ?? '')
      const g = gates.get(folder)
      if (g) {
        // Held until the gate opens, or until the worker gives the build up (a stop).
        await Promise.race([
          g.opened,
          new Promise((_, reject) => {
            if (signal.aborted) reject(signal.reason)
            signal.addEventListener('abort', () => reject(signal.reason), { once: true })
          }),
        ])
      }
      if (folder.startsWith('broken-')) throw new ExportFailure('The webhook log could not be read')
      if (folder.startsWith('crashing-')) throw new Error('unexpected failure inside the build')
      yield* webhookLogSource(s.container.database).pages(job, pageSize, signal)
    },
  }
  function gate(folder: string): () => void {
    let open = () => {}
    const opened = new Promise<void>((resolve) => {
      open = resolve
    })
    gates.set(folder, { opened, open })
    return open
  }

  const s = useServer(dialect, {}, { exportSources: { webhook_log: source } })
  afterAll(async () => {
    for (const g of gates.values()) g.open()
  })

  it('refuses the results while building with export-not-ready, then gives them once ready', async () => {
    const folder = tag('held')
    const seeded = await seedLog(s, [{ path: `${folder}/a.txt` }, { path: `${folder}/b.txt` }])
    const open = gate(folder)
    const made = await createExport(s, { query_folder: folder }, admin())
    expect(made.status, made.text).toBe(201)
    expect(made.body).toMatchObject({
      status: 'building',
      results_url: null,
      failure_reason: null,
      results_count: null,
    })
    const id = made.body.id as number
    // However often it is asked, it stays building while the build cannot go on.
    for (let i = 0; i < 3; i++) {
      const e = await getExport(s, id, admin())
      expect(e.body).toMatchObject({ id, status: 'building', results_url: null })
      expectError(await getResults(s, id, admin()), 422, 'processing-failure/export-not-ready')
    }
    open()
    const done = await pollExport(s, id, admin())
    expect(done).toMatchObject({ id, status: 'ready', failure_reason: null, results_count: 2 })
    const { rows } = await walkResults(s, id, admin())
    expect(rows).toEqual(seeded.map(expectedResult))
    await expectCsvMatches(done.results_url, rows)
  })

  it('stays building while another worker holds the claim', async () => {
    const id = await insertExportRow(s, { status: 'building', leaseOwner: 'another-process' })
    expect((await getExport(s, id, admin())).body).toMatchObject({
      id,
      status: 'building',
      results_url: null,
    })
    expectError(await getResults(s, id, admin()), 422, 'processing-failure/export-not-ready')
  })

  it('reports a failed build with its reason and refuses its results with export-failure', async () => {
    for (const folder of [tag('broken'), tag('crashing')]) {
      const made = await createExport(s, { query_folder: folder }, admin())
      expect(made.status, made.text).toBe(201)
      const done = await pollExport(s, made.body.id, admin())
      expect(done).toMatchObject({
        status: 'failed',
        results_url: null,
        failure_reason: expect.any(String),
        results_count: null,
      })
      expect(done.failure_reason.length).toBeGreaterThan(0)
      expectError(await getResults(s, made.body.id, admin()), 422, 'processing-failure/export-failure')
    }
  })

  it('finishes a build whose worker died: its claim runs out and another worker builds it', async () => {
    const folder = tag('crashed')
    const seeded = await seedLog(s, [{ path: `${folder}/a.txt` }, { path: `${folder}/b/c.txt` }])
    const id = await insertExportRow(s, {
      status: 'building',
      leaseOwner: 'a-process-that-died',
      leaseUntil: Date.now() - 1000,
      query: { query_folder: folder },
    })
    const done = await pollExport(s, id, admin())
    expect(done).toMatchObject({ id, status: 'ready', query_folder: folder, failure_reason: null })
    const { rows } = await walkResults(s, id, admin())
    expect(rows).toEqual(seeded.map(expectedResult))
    await expectCsvMatches(done.results_url, rows)
  })

  it('finishes a build cut short by a stop of the worker once a worker runs again', async () => {
    const folder = tag('restart')
    const seeded = await seedLog(s, [{ path: `${folder}/a.txt` }])
    const open = gate(folder)
    const made = await createExport(s, { query_folder: folder }, admin())
    expect(made.status).toBe(201)
    // The build is under way (claimed), held at its first page; the worker stops, as at shutdown.
    let claimed = false
    for (let i = 0; i < 400 && !claimed; i++) {
      const row = await s.container.db
        .selectFrom('exports')
        .select('lease_owner')
        .where('id', '=', made.body.id)
        .executeTakeFirstOrThrow()
      claimed = row.lease_owner !== null
      if (!claimed) await new Promise((r) => setTimeout(r, 10))
    }
    expect(claimed).toBe(true)
    await s.container.exports.worker.stop()
    open()
    expect((await getExport(s, made.body.id, admin())).body.status).toBe('building')
    await s.container.exports.worker.start()
    const done = await pollExport(s, made.body.id, admin())
    expect(done.status).toBe('ready')
    expect((await walkResults(s, made.body.id, admin())).rows).toEqual(seeded.map(expectedResult))
  })
})
