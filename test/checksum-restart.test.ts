import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { md5, req, upload } from './helpers/files.js'
import { type DialectName, dialects } from './helpers/server.js'
import {
  type ProcessSite,
  processSite,
  type ServerProcesses,
  serverProcesses,
} from './helpers/server-process.js'

/**
 * A checksum job outlives its server: the built server (as `npm start` runs it) is SIGKILLed with
 * a job still claimed by it, and the next server on the same data computes the checksums.
 */
let servers: ServerProcesses
const sites: ProcessSite[] = []

beforeAll(async () => {
  servers = serverProcesses()
}, 120_000)

afterAll(async () => {
  await servers?.killAll()
  for (const s of sites) await s.remove()
})

const pollWithin = (ms = 20_000) => ({ timeout: ms + 1_000, interval: 20 })

describe.each(dialects)('checksums across a killed server process (%s)', (dialect: DialectName) => {
  it('computes, in the next process, the checksums of a job the killed one held', async () => {
    const { step } = servers
    // A short lease and poll, so that on PostgreSQL the killed process's claim runs out soon.
    const site = await processSite(servers, dialect, { CHECKSUM_LEASE_SECONDS: '2', CHECKSUM_POLL_MS: '100' })
    sites.push(site)
    const db = site.db.db
    const content = Buffer.from('bytes whose checksums a crash interrupted')

    const first = await servers.serve(site.env())
    await step('the upload', upload({ api: first.api, key: site.key }, 'crash/sums.txt', content))
    const file = () =>
      db.selectFrom('files').selectAll().where('path_lower', '=', 'crash/sums.txt').executeTakeFirstOrThrow()
    await step(
      'its first checksums',
      vi.waitFor(async () => expect((await file()).md5).not.toBeNull(), pollWithin()),
    )
    first.child.kill('SIGKILL')
    await step('the server exiting on SIGKILL', first.exited)

    // What the killed process would have left had it died while reading the blob: the file
    // without checksums, and the job claimed by a process that no longer exists.
    const { blob_key } = await file()
    await db
      .updateTable('files')
      .set({ md5: null, crc32: null })
      .where('path_lower', '=', 'crash/sums.txt')
      .execute()
    await db
      .insertInto('checksum_jobs')
      .values({
        blob_key: blob_key!,
        attempts: 1,
        lease_owner: 'killed-host:1:00000000',
        lease_until: Date.now() + 2000,
        created_at: Date.now(),
      })
      .execute()

    const second = await servers.serve(site.env())
    const done = await step(
      'the checksums after the restart',
      vi.waitFor(async () => {
        const r = await req({ api: second.api, key: site.key }, 'GET', '/files/crash/sums.txt')
        expect(r.body.md5).not.toBeNull()
        return r.body
      }, pollWithin()),
      25_000,
    )
    expect(done.md5).toBe(md5(content))
    expect(await db.selectFrom('checksum_jobs').selectAll().execute()).toEqual([])
    second.child.kill('SIGTERM')
    await step('the server exiting on SIGTERM', second.exited)
  }, 120_000)
})
