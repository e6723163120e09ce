import crypto from 'node:crypto'
import { beforeEach, describe, expect, it } from 'vitest'
import type { BlobStore } from '../src/blobs/blob-store.js'
import { download, req, type Target, upload } from './helpers/files.js'
import { s3ForTests, storeCases } from './helpers/s3-cases.js'
import { expectError, useServerEach } from './helpers/server.js'
import { queuedBlobKeys, storedBlobKeys, watchStore } from './helpers/storage.js'

/**
 * A copy writes its new blobs before the transaction that names them. A process that dies right
 * after the store wrote one must leave nothing behind that the janitor does not delete, on
 * either store, and no file that lost its bytes.
 */
const HOUR = 3600_000

const s3 = s3ForTests()

// Copies are the proxy store's CopyObject in either mode; proxy mode keeps the uploads
// that make the sources simple.
const cases = storeCases(s3, 'copy-crash')

/** What a blob copy does besides its own work: nothing, or something run before or after it. */
interface AfterCopy {
  /** Run before the store is asked, with what it is asked. */
  before: ((args: Parameters<BlobStore['copy']>) => Promise<void>) | null
  /** Run once the store wrote the n-th blob. */
  run: ((n: number) => Promise<void>) | null
  /** The key of every blob a copy wrote, in the order they were written. */
  keys: string[]
}

describe.each(cases)('a crash in a copy ($dialect, $store)', ({ dialect, env }) => {
  let t: Target
  let clock: number
  const after: AfterCopy = { before: null, run: null, keys: [] }

  const s = useServerEach(dialect, env, () => {
    clock = Date.now()
    after.before = null
    after.run = null
    after.keys = []
    return {
      now: () => clock,
      wrapBlobStore: watchStore(['copy'], {
        before: async (_, args) => after.before?.(args as Parameters<BlobStore['copy']>),
        after: async (_, key) => {
          after.keys.push(key)
          await after.run?.(after.keys.length)
        },
      }),
    }
  })
  beforeEach(() => {
    t = { api: s.api, key: s.adminKey }
  })

  const blobs = () => s.container.blobs
  const stored = () => storedBlobKeys(s.container.config, (b, prefix) => s3.server.keys(b, prefix))
  const queued = () => queuedBlobKeys(s.container.db)
  /** The blob of every file, as the database names them. */
  const fileBlobs = async () =>
    (await s.container.db.selectFrom('files').select('blob_key').where('blob_key', 'is not', null).execute())
      .map((r) => r.blob_key!)
      .sort()
  const copy = (from: string, to: string) => req(t, 'POST', `/file_actions/copy/${from}`, { destination: to })
  const janitor = async () => (await s.container.janitor.runOnce()).garbageDeleted

  it('leaves a blob copied just before the process died to the janitor, and nothing visible', async () => {
    const dir = `crash-${crypto.randomBytes(3).toString('hex')}`
    const bytes = crypto.randomBytes(70_000)
    await upload(t, `${dir}/src.bin`, bytes)
    const sources = await fileBlobs()
    expect(await stored()).toEqual(sources)

    // Nothing of the copy after the store wrote the blob runs: the process is gone as far as
    // the database knows.
    after.run = async () => {
      throw new Error('process died')
    }
    expectError(await copy(`${dir}/src.bin`, `${dir}/copy.bin`), 500, 'internal-server-error')
    expect(after.keys).toHaveLength(1)
    const orphan = after.keys[0]!
    expect(await blobs().size(orphan)).toBe(bytes.length)
    expectError(
      await req(t, 'GET', `/file_actions/metadata/${dir}/copy.bin`),
      404,
      'not-found/file-not-found',
    )
    // Queued before it was written, so something names it.
    expect(await queued()).toEqual([orphan])

    // Young queued blobs are left alone; after the grace period the orphan goes, the source stays.
    expect(await janitor()).toBe(0)
    clock += 2 * HOUR
    expect(await janitor()).toBe(1)
    expect(await blobs().size(orphan)).toBeNull()
    expect(await queued()).toEqual([])
    expect(await stored()).toEqual(sources)
    expect((await download(t, `${dir}/src.bin`)).equals(bytes)).toBe(true)
  })

  it('leaves every blob of a folder copy cut short to the janitor, and copying again keeps its bytes', async () => {
    const dir = `tree-${crypto.randomBytes(3).toString('hex')}`
    const contents = Array.from({ length: 6 }, (_, i) => crypto.randomBytes(1000 + i))
    for (const [i, c] of contents.entries()) await upload(t, `${dir}/src/f${i}.bin`, c)
    const sources = await fileBlobs()
    expect(sources).toHaveLength(contents.length)

    // The process dies once the third blob is written; copies running beside it finish theirs.
    after.run = async (n) => {
      if (n === 3) throw new Error('process died')
    }
    expectError(await copy(`${dir}/src`, `${dir}/dest`), 500, 'internal-server-error')
    expect(after.keys.length).toBeGreaterThanOrEqual(3)
    const orphans = [...after.keys].sort()
    for (const key of orphans) expect(await blobs().size(key)).not.toBeNull()
    expect(await queued()).toEqual(orphans)
    expect(await fileBlobs()).toEqual(sources)
    expectError(await req(t, 'GET', `/file_actions/metadata/${dir}/dest`), 404, 'not-found/file-not-found')

    // The copy, tried again, commits with blobs of its own.
    after.run = null
    after.keys = []
    const again = await copy(`${dir}/src`, `${dir}/dest`)
    expect(again.status, again.text).toBe(201)
    const copies = [...after.keys].sort()
    expect(copies).toHaveLength(contents.length)
    expect(await fileBlobs()).toEqual([...sources, ...copies].sort())
    // Only the first attempt's blobs are still queued: the commit took its own off the queue.
    expect(await queued()).toEqual(orphans)

    clock += 2 * HOUR
    expect(await janitor()).toBe(orphans.length)
    expect(await queued()).toEqual([])
    expect(await stored()).toEqual(await fileBlobs())
    for (const [i, c] of contents.entries()) {
      expect((await download(t, `${dir}/src/f${i}.bin`)).equals(c)).toBe(true)
      expect((await download(t, `${dir}/dest/f${i}.bin`)).equals(c)).toBe(true)
    }
  })

  it('leaves a key queued when the process died before the store wrote anything', async () => {
    const dir = `early-${crypto.randomBytes(3).toString('hex')}`
    await upload(t, `${dir}/src.bin`, 'early')
    const sources = await fileBlobs()
    // The copy never reaches the store: the process died between queueing the key and writing.
    const asked: Parameters<BlobStore['copy']>[] = []
    after.before = async (args) => {
      asked.push(args)
      throw new Error('process died')
    }
    expectError(await copy(`${dir}/src.bin`, `${dir}/copy.bin`), 500, 'internal-server-error')
    expect(after.keys).toEqual([])
    expect(asked).toHaveLength(1)
    const [source, key] = asked[0]!
    expect(source).toBe(sources[0])
    expect(key).toMatch(/^[0-9a-f]{32}$/)
    expect(await queued()).toEqual([key])
    expect(await blobs().size(key!)).toBeNull()
    clock += 2 * HOUR
    expect(await janitor()).toBe(1)
    expect(await queued()).toEqual([])
    expect(await stored()).toEqual(sources)
  })
})
