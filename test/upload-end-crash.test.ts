import crypto from 'node:crypto'
import { beforeEach, describe, expect, it } from 'vitest'
import { download, endUpload, md5, req, stageUpload, type Target, withChecksums } from './helpers/files.js'
import { s3ForTests, storeCases } from './helpers/s3-cases.js'
import { expectError, useServerEach } from './helpers/server.js'
import { watchStore } from './helpers/storage.js'

/**
 * `action=end` writes a new blob before the transaction that names it. A process that dies in
 * between must leave nothing behind that the janitor does not delete, on either store.
 */
const HOUR = 3600_000
const PART = 64 * 1024

const s3 = s3ForTests()

// Parts staged through Wharf, which stay staged until the upload ends, so ending again
// works. In direct mode the store completes S3's multipart upload at the assembly: a crash
// after it leaves the queued key for the janitor all the same, and ending again is 422.
const cases = storeCases(s3, 'end-crash')

/** What an assembly does besides its own work: nothing, or something run right after it. */
interface AfterAssemble {
  run: ((key: string) => Promise<void>) | null
  keys: string[]
}

describe.each(cases)('a crash in action=end ($dialect, $store)', ({ dialect, env }) => {
  let t: Target
  let clock: number
  const after: AfterAssemble = { run: null, keys: [] }

  const s = useServerEach(
    dialect,
    () => ({ ...env(), UPLOAD_PART_SIZE: String(PART) }),
    () => {
      clock = Date.now()
      after.run = null
      after.keys = []
      return {
        now: () => clock,
        // After the assembly wrote its blob (its key kept), `after.run`.
        wrapBlobStore: watchStore(['assemble'], {
          after: async (_, key) => {
            after.keys.push(key)
            await after.run?.(key)
          },
        }),
      }
    },
  )
  beforeEach(() => {
    t = { api: s.api, key: s.adminKey }
  })

  const blobs = () => s.container.blobs
  const fileRows = (p: string) =>
    s.container.db.selectFrom('files').select('blob_key').where('path_lower', '=', p.toLowerCase()).execute()

  it('leaves a blob assembled just before the process died to the janitor, and nothing visible', async () => {
    const p = `crash-${crypto.randomBytes(3).toString('hex')}/file.bin`
    const bytes = crypto.randomBytes(2 * PART + 100)
    const ref = await stageUpload(t, p, bytes)
    // Nothing of `end` after the assembly runs: the process is gone as far as the database knows.
    after.run = async () => {
      throw new Error('process died')
    }
    expectError(await endUpload(t, p, ref), 500, 'internal-server-error')
    expect(after.keys).toHaveLength(1)
    const orphan = after.keys[0]!
    expect(await blobs().size(orphan)).toBe(bytes.length)
    expectError(await req(t, 'GET', `/file_actions/metadata/${p}`), 404, 'not-found/file-not-found')
    expect(await fileRows(p)).toEqual([])

    // The upload is still open and its parts still staged: ending it again makes the file.
    after.run = null
    const ended = await endUpload(t, p, ref)
    expect(ended.status).toBe(201)
    expect(ended.body.size).toBe(bytes.length)
    const [row] = await fileRows(p)
    expect(row?.blob_key).toBe(after.keys[1])
    expect(row?.blob_key).not.toBe(orphan)

    // Young queued blobs are left alone; after the grace period the orphan goes, the file stays.
    expect((await s.container.janitor.runOnce()).garbageDeleted).toBe(0)
    expect(await blobs().size(orphan)).toBe(bytes.length)
    clock += 2 * HOUR
    expect((await s.container.janitor.runOnce()).garbageDeleted).toBe(1)
    expect(await blobs().size(orphan)).toBeNull()
    expect(await s.container.db.selectFrom('blob_garbage').select('blob_key').execute()).toEqual([])
    expect((await download(t, p)).equals(bytes)).toBe(true)
    expect((await withChecksums(t, p)).md5).toBe(md5(bytes))
  })

  it('fails the end of an assembly slower than the grace period, whose blob the janitor collected', async () => {
    const p = `slow-${crypto.randomBytes(3).toString('hex')}/file.bin`
    const bytes = crypto.randomBytes(PART + 7)
    const ref = await stageUpload(t, p, bytes)
    // The assembly takes two hours, and the janitor runs meanwhile.
    after.run = async () => {
      clock += 2 * HOUR
      await s.container.janitor.runOnce()
    }
    expectError(await endUpload(t, p, ref), 500, 'internal-server-error')
    const slow = after.keys[0]!
    // The janitor may have deleted the key before or after the blob appeared: it is queued again.
    const queued = await s.container.db.selectFrom('blob_garbage').select('blob_key').execute()
    expect(queued).toEqual([{ blob_key: slow }])
    expect(await fileRows(p)).toEqual([])

    after.run = null
    const ended = await endUpload(t, p, ref)
    expect(ended.status).toBe(201)
    clock += 2 * HOUR
    await s.container.janitor.runOnce()
    expect(await blobs().size(slow)).toBeNull()
    expect((await download(t, p)).equals(bytes)).toBe(true)
  })
})
