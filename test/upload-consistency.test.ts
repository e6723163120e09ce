import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  beginUpload,
  download,
  endUpload,
  md5,
  partUrl,
  putBytes,
  req,
  split,
  stageUpload,
  type Target,
  withChecksums,
} from './helpers/files.js'
import { dialects, expectError, useServer } from './helpers/server.js'
import {
  type ProcessSite,
  processSite,
  type ServerProcesses,
  serverProcesses,
} from './helpers/server-process.js'
import { expectNoLeakedBlobs, stagedRefs, stalledPut } from './helpers/storage.js'

/**
 * What concurrent and interrupted uploads leave behind: one whole file or none, never a mix, and
 * no stored bytes that nothing points to and nothing will delete.
 */
const PART = 64 * 1024

describe.each(dialects)('upload consistency (%s)', (dialect) => {
  let t: Target
  let storage: string
  const s = useServer(dialect, { UPLOAD_PART_SIZE: String(PART) })
  beforeAll(async () => {
    t = { api: s.api, key: s.adminKey }
    storage = path.join(s.container.config.dataDir, 'storage')
  })

  it('ends eight concurrent uploads of one path in one file holding exactly one of them', async () => {
    const p = `race-${crypto.randomBytes(3).toString('hex')}/same.bin`
    const contents = Array.from({ length: 8 }, (_, i) => crypto.randomBytes(PART + 1000 * (i + 1)))
    // Every upload staged in full first, then every `end` at once.
    const refs = await Promise.all(contents.map((c) => stageUpload(t, p, c)))
    const ends = await Promise.all(refs.map((ref) => endUpload(t, p, ref)))
    expect(ends.map((e) => e.status).every((st) => st >= 200 && st < 300)).toBe(true)

    const rows = await s.container.db
      .selectFrom('files')
      .selectAll()
      .where('path_lower', '=', p.toLowerCase())
      .execute()
    expect(rows).toHaveLength(1)
    const row = rows[0]!
    const bytes = await download(t, p)
    const winner = contents.findIndex((c) => c.equals(bytes))
    expect(winner).toBeGreaterThanOrEqual(0)
    expect((await withChecksums(t, p)).md5).toBe(md5(bytes))
    expect(Number(row.size)).toBe(bytes.length)
    // The answer of the upload that won names the same bytes (each upload has a size of its own;
    // the md5 is not in any answer yet: the background job computes it after the upload).
    expect(ends.some((e) => e.body.id === row.id && e.body.size === bytes.length)).toBe(true)

    // One create and seven replacements in the history (besides the download's read).
    const actions = await s.container.db
      .selectFrom('actions')
      .select('action')
      .where('path', '=', p)
      .where('action', '!=', 'read')
      .execute()
    expect(actions.map((a) => a.action).sort()).toEqual(['create', ...Array(7).fill('update')].sort())

    // Nothing of the uploads is left: no upload rows, no staged parts, no unaccounted blob.
    const open = await s.container.db.selectFrom('uploads').select('ref').where('ref', 'in', refs).execute()
    expect(open).toEqual([])
    expect((await stagedRefs(storage)).filter((r) => refs.includes(r))).toEqual([])
    await expectNoLeakedBlobs(s.container.db, storage)
  })

  it('keeps nothing of a part whose upload is cut off midway, and the upload can be finished', async () => {
    const p = `cut-${crypto.randomBytes(3).toString('hex')}/file.bin`
    const bytes = crypto.randomBytes(2 * PART + 10)
    const first = await beginUpload(t, p)
    const part1 = await partUrl(t, p, first.ref, 1)
    const stalled = await stalledPut(part1.upload_uri, PART, bytes.subarray(0, PART / 2), storage)
    stalled.abort()
    expect(await stalled.answered).toBe('aborted')

    // The half-written part is dropped: no staged copy, no record, no temporary file.
    await expect
      .poll(async () => (await fs.readdir(path.join(storage, 'tmp'))).length, {
        timeout: 10_000,
        interval: 50,
      })
      .toBe(0)
    const upload = await s.container.db
      .selectFrom('uploads')
      .select('id')
      .where('ref', '=', first.ref)
      .executeTakeFirstOrThrow()
    const parts = await s.container.db
      .selectFrom('upload_parts')
      .select('part_number')
      .where('upload_id', '=', upload.id)
      .execute()
    expect(parts).toEqual([])
    await expect(fs.stat(path.join(storage, 'parts', first.ref, '1'))).rejects.toThrow()

    // No file appeared, and the server goes on answering.
    expectError(await req(t, 'GET', `/file_actions/metadata/${p}`), 404, 'not-found/file-not-found')

    // Sending the parts again finishes the same upload.
    const chunks = split(bytes, PART)
    for (let i = 0; i < chunks.length; i++) {
      const u = await partUrl(t, p, first.ref, i + 1)
      expect((await putBytes(u.upload_uri, chunks[i]!)).status).toBeLessThan(300)
    }
    const end = await endUpload(t, p, first.ref)
    expect(end.status).toBeLessThan(300)
    expect((await download(t, p)).equals(bytes)).toBe(true)
    await expectNoLeakedBlobs(s.container.db, storage)
  })
})

/**
 * The built server as a child process (as `npm start` runs it), killed with SIGKILL in the middle
 * of an upload and started again on the same DATA_DIR.
 */
describe('upload interrupted by a killed server process (sqlite)', () => {
  let servers: ServerProcesses
  let site: ProcessSite

  beforeAll(async () => {
    servers = serverProcesses()
    site = await processSite(servers, 'sqlite', { UPLOAD_PART_SIZE: String(PART) })
  }, 120_000)

  afterAll(async () => {
    await servers?.killAll()
    await site?.remove()
  })

  it('shows no file after a SIGKILL mid-upload, and the upload finishes after a restart', async () => {
    const { step } = servers
    const { key } = site
    const storage = path.join(site.dataDir, 'storage')
    const bytes = crypto.randomBytes(3 * PART + 123)
    const chunks = split(bytes, PART)
    const p = 'crash/big.bin'

    const first = await servers.serve(site.env())
    let t: Target = { api: first.api, key }
    const opened = await step('opening the upload', beginUpload(t, p))
    const part1 = await step('asking for part 1', partUrl(t, p, opened.ref, 1))
    expect((await step('sending part 1', putBytes(part1.upload_uri, chunks[0]!))).status).toBeLessThan(300)
    const part2 = await step('asking for part 2', partUrl(t, p, opened.ref, 2))
    const stalled = await step(
      'starting part 2',
      stalledPut(part2.upload_uri, PART, chunks[1]!.subarray(0, PART / 3), storage),
    )
    first.child.kill('SIGKILL')
    await step('the killed server exiting', first.exited)
    expect(await step('part 2 seeing the connection drop', stalled.answered)).toBe('aborted')

    const second = await servers.serve(site.env())
    t = { api: second.api, key }
    expectError(
      await step('metadata after restart', req(t, 'GET', `/file_actions/metadata/${p}`)),
      404,
      'not-found/file-not-found',
    )
    const listing = await step('listing after restart', req(t, 'GET', '/folders/crash'))
    if (listing.status === 200) expect(listing.body).toEqual([])
    else expectError(listing, 404, 'not-found/folder-not-found')

    // The same upload goes on: part 1 survived the crash, parts 2… are sent again.
    for (let i = 1; i < chunks.length; i++) {
      const u = await step(`asking for part ${i + 1} again`, partUrl(t, p, opened.ref, i + 1))
      expect(
        (await step(`sending part ${i + 1} again`, putBytes(u.upload_uri, chunks[i]!))).status,
      ).toBeLessThan(300)
    }
    const end = await step('ending the upload', endUpload(t, p, opened.ref))
    expect(end.status).toBeLessThan(300)
    expect((await step('its checksums', withChecksums(t, p))).md5).toBe(md5(bytes))
    expect((await step('downloading it', download(t, p))).equals(bytes)).toBe(true)

    // A fresh upload of another file works too.
    const again = crypto.randomBytes(PART + 1)
    const ref = await step('a second upload', stageUpload(t, 'crash/again.bin', again))
    expect((await step('ending it', endUpload(t, 'crash/again.bin', ref))).status).toBeLessThan(300)
    expect((await step('downloading it', download(t, 'crash/again.bin'))).equals(again)).toBe(true)

    second.child.kill('SIGTERM')
    await step('the server stopping on SIGTERM', second.exited)
  }, 120_000)
})
