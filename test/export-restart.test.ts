import { parse } from 'csv-parse/sync'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { req } from './helpers/files.js'
import { type DialectName, dialects } from './helpers/server.js'
import {
  type ProcessSite,
  processSite,
  type ServerProcess,
  type ServerProcesses,
  serverProcesses,
} from './helpers/server-process.js'

/**
 * An export survives its server: the built server (as `npm start` runs it) is SIGKILLed while it
 * builds a history export, and after a restart on the same data the export is built again from
 * the start and ends ready, with every record exactly once, the killed build's file left queued
 * for the janitor.
 */
const ACTIONS = 20_000

let servers: ServerProcesses
const sites: ProcessSite[] = []

beforeAll(async () => {
  servers = serverProcesses()
}, 120_000)

afterAll(async () => {
  await servers?.killAll()
  for (const s of sites) await s.remove()
})

/**
 * Polling options for a wait inside a step of `ms`: bounded just past the step, so a wait that
 * runs late fails as the step (with what the servers said), and then stops polling.
 */
const pollWithin = (ms = 20_000) => ({ timeout: ms + 1_000, interval: 10 })

async function stop(p: ServerProcess, signal: NodeJS.Signals): Promise<void> {
  p.child.kill(signal)
  await servers.step(`the server exiting on ${signal}`, p.exited)
}

describe.each(dialects)('an export across a killed server process (%s)', (dialect: DialectName) => {
  it('builds again, from the start, an export whose server was killed while building it', async () => {
    const { step } = servers
    // One record per step, so the build lasts long enough to be caught; a short lease, so that
    // on PostgreSQL the killed process's claim runs out soon.
    const site = await processSite(servers, dialect, { EXPORT_PAGE_SIZE: '1', EXPORT_LEASE_SECONDS: '2' })
    sites.push(site)
    const siteId = (await site.db.db.selectFrom('sites').select('id').executeTakeFirstOrThrow()).id
    const t0 = Date.now() - 10 * 86_400_000
    for (let i = 0; i < ACTIONS; i += 1000) {
      await site.db.db
        .insertInto('actions')
        .values(
          Array.from({ length: 1000 }, (_, j) => ({
            site_id: siteId,
            created_at: t0 + i + j,
            user_id: null,
            username: null,
            action: 'create',
            path: `restart/f${i + j}.txt`,
            folder: 'restart',
            source: null,
            destination: null,
            display: `Uploaded f${i + j}.txt`,
            ip: '192.0.2.9',
            interface: 'restapi',
            failure_type: null,
            targets: '[]',
          })),
        )
        .execute()
    }
    const exportRow = (id: number) =>
      site.db.db
        .selectFrom('exports')
        .select(['status', 'lease_owner', 'attempts', 'result_count'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow()

    const first = await servers.serve(site.env())
    const t = { api: first.api, key: site.key }
    const made = await req(t, 'POST', '/history_exports', { query_folder: 'restart' })
    expect(made.status, made.text).toBe(201)
    const id = made.body.id as number
    // Claimed, its file's key queued, and under way: killed in the middle of writing its CSV.
    const queuedKeys = () => site.db.db.selectFrom('blob_garbage').select('blob_key').execute()
    await step(
      'the build under way',
      vi.waitFor(async () => {
        expect((await exportRow(id)).lease_owner).not.toBeNull()
        expect(await queuedKeys()).toHaveLength(1)
      }, pollWithin()),
    )
    await stop(first, 'SIGKILL')
    expect(await exportRow(id)).toMatchObject({ status: 'building', attempts: 1 })

    const second = await servers.serve(site.env())
    const t2 = { api: second.api, key: site.key }
    const done = await step(
      'the export ready after the restart',
      vi.waitFor(async () => {
        const r = await exportRow(id)
        expect(r.status).not.toBe('building')
        return r
      }, pollWithin(60_000)),
      60_000,
    )
    expect(done).toMatchObject({ status: 'ready', attempts: 2, result_count: ACTIONS, lease_owner: null })
    // The killed build's key was queued before it wrote a byte, so whatever it left is the
    // janitor's to delete; the second build's file left the queue as the export became ready.
    const queued = await queuedKeys()
    const ready = await site.db.db
      .selectFrom('exports')
      .select('blob_key')
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
    expect(queued).toHaveLength(1)
    expect(ready.blob_key).toMatch(/^[0-9a-f]{32}$/)
    expect(queued[0]!.blob_key).not.toBe(ready.blob_key)
    const shown = await req(t2, 'GET', `/history_exports/${id}`)
    expect(shown.body.status).toBe('ready')
    const csv = await fetch(shown.body.results_url as string)
    expect(csv.status).toBe(200)
    const rows = parse(await csv.text()) as string[][]
    expect(rows).toHaveLength(ACTIONS + 1)
    expect(new Set(rows.slice(1).map((r) => r[0])).size).toBe(ACTIONS)
    expect(rows[1]![6]).toBe('restart/f0.txt')
    expect(rows.at(-1)![6]).toBe(`restart/f${ACTIONS - 1}.txt`)
    await stop(second, 'SIGTERM')
  }, 120_000)
})
