import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { BlobJanitor } from '../src/blobs/blob-janitor.js'
import type { BlobStore } from '../src/blobs/blob-store.js'
import { S3BlobStore } from '../src/blobs/s3/s3-blob-store.js'
import { createS3Client } from '../src/blobs/s3/s3-client.js'
import { JobLease } from '../src/jobs/job-lease.js'
import { s3ForTests, storeCases } from './helpers/s3-cases.js'
import { useServerEach } from './helpers/server.js'

const HOUR = 3600_000

const s3 = s3ForTests()

/** Each database with each blob store; S3 in proxy mode, every byte through Wharf. */
const cases = storeCases(s3, 'janitor')

describe.each(cases)('blob janitor ($dialect, $store)', ({ dialect, store, env }) => {
  let clock: number
  let storage: string

  const s = useServerEach(dialect, env, () => {
    clock = Date.now()
    return { now: () => clock }
  })
  beforeEach(() => {
    // The disk store's folder; the S3 store keeps only its temporary files there.
    storage = path.join(s.container.config.dataDir, 'storage')
  })

  const blobs = () => s.container.blobs
  const db = () => s.container.db
  const putBlob = async (text = 'bytes') => (await blobs().put(Readable.from([Buffer.from(text)]))).key

  async function queueGarbage(key: string, createdAt: number): Promise<void> {
    await db().insertInto('blob_garbage').values({ blob_key: key, created_at: createdAt }).execute()
  }
  const garbageKeys = async () =>
    (await db().selectFrom('blob_garbage').select('blob_key').execute()).map((r) => r.blob_key)

  /** An upload row with `parts` staged in the store and recorded in upload_parts. */
  async function makeUpload(ref: string, expiresAt: number, parts = 2): Promise<number> {
    const { id } = await db()
      .insertInto('uploads')
      .values({
        site_id: s.container.site.id,
        ref,
        path: `folder/${ref}.bin`,
        user_id: null,
        api_key_id: null,
        mkdir_parents: 1,
        provided_mtime: null,
        created_at: clock - 2 * HOUR,
        expires_at: expiresAt,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    for (let n = 1; n <= parts; n++) {
      const { size } = await blobs().putPart(ref, n, Readable.from([Buffer.from(`part ${n}`)]))
      await db()
        .insertInto('upload_parts')
        .values({ upload_id: id, part_number: n, size, created_at: clock })
        .execute()
    }
    return id
  }
  const partRows = async (uploadId: number) =>
    (await db().selectFrom('upload_parts').select('part_number').where('upload_id', '=', uploadId).execute())
      .length
  const uploadRefs = async () =>
    (await db().selectFrom('uploads').select('ref').orderBy('ref').execute()).map((r) => r.ref)
  async function stagedRefs(): Promise<string[]> {
    const refs: string[] = []
    for await (const staged of blobs().stagedUploads()) refs.push(staged.ref)
    return refs.sort()
  }
  async function age(file: string, ms: number): Promise<void> {
    const then = new Date(Date.now() - ms)
    await fs.utimes(file, then, then)
  }

  it('deletes queued blobs once they are older than the grace period, and keeps young ones', async () => {
    const old = await putBlob('old')
    const young = await putBlob('young')
    const kept = await putBlob('in use')
    await queueGarbage(old, clock - HOUR - 1)
    await queueGarbage(young, clock - 10_000)

    expect(await s.container.janitor.runOnce()).toMatchObject({ garbageDeleted: 1, garbageFailed: 0 })
    expect(await blobs().size(old)).toBeNull()
    expect(await blobs().size(young)).toBe(5)
    expect(await garbageKeys()).toEqual([young])

    clock += HOUR
    expect(await s.container.janitor.runOnce()).toMatchObject({ garbageDeleted: 1 })
    expect(await blobs().size(young)).toBeNull()
    expect(await garbageKeys()).toEqual([])
    expect(await blobs().size(kept)).toBe(6)
  })

  it('never deletes a queued blob that a file still uses', async () => {
    const key = await putBlob('still needed')
    await db()
      .insertInto('files')
      .values({
        site_id: s.container.site.id,
        path: 'kept.txt',
        path_lower: 'kept.txt',
        parent_lower: '',
        name: 'kept.txt',
        type: 'file',
        size: 12,
        blob_key: key,
        custom_metadata: '{}',
        created_at: clock,
        mtime: clock,
      })
      .execute()
    await queueGarbage(key, clock - 2 * HOUR)
    expect(await s.container.janitor.runOnce()).toMatchObject({ garbageDeleted: 1, garbageFailed: 0 })
    expect(await blobs().size(key)).toBe(12)
    expect(await garbageKeys()).toEqual([])
  })

  it('clears a queued row whose blob is already gone', async () => {
    const key = await putBlob()
    await blobs().delete(key)
    await queueGarbage(key, clock - 2 * HOUR)
    await queueGarbage(key, clock - 2 * HOUR) // queued twice: both rows go
    expect(await s.container.janitor.runOnce()).toMatchObject({ garbageDeleted: 2, garbageFailed: 0 })
    expect(await garbageKeys()).toEqual([])
  })

  it('removes an expired upload with its parts and leaves a live one alone', async () => {
    const expired = await makeUpload('expired1', clock - 1)
    const live = await makeUpload('live1', clock + HOUR)

    expect(await s.container.janitor.runOnce()).toMatchObject({ uploadsExpired: 1 })
    expect(await uploadRefs()).toEqual(['live1'])
    expect(await partRows(expired)).toBe(0)
    expect(await partRows(live)).toBe(2)
    expect(await stagedRefs()).toEqual(['live1'])
    expect((await blobs().assemble('live1', [1, 2])).size).toBe(12)
  })

  it('discards a staged folder no upload owns only once it is old', async () => {
    await blobs().putPart('orphan1', 1, Readable.from([Buffer.from('left behind')]))
    await makeUpload('owned1', clock + 3 * HOUR)

    expect(await s.container.janitor.runOnce()).toMatchObject({ orphanPartsDiscarded: 0 })
    expect(await stagedRefs()).toEqual(['orphan1', 'owned1'])

    // Both are old now (by the janitor's clock); only the one no upload owns goes.
    clock += HOUR + 60_000
    expect(await s.container.janitor.runOnce()).toMatchObject({ orphanPartsDiscarded: 1 })
    expect(await stagedRefs()).toEqual(['owned1'])
  })

  it('sweeps temporary files left by a crash once they are old', async () => {
    await putBlob() // the store's folders exist from here
    await fs.mkdir(path.join(storage, 'tmp'), { recursive: true })
    await fs.writeFile(path.join(storage, 'tmp', 'crashed'), 'half a blob')
    await fs.writeFile(path.join(storage, 'tmp', 'writing'), 'in progress')
    await age(path.join(storage, 'tmp', 'crashed'), 2 * HOUR)
    expect(await s.container.janitor.runOnce()).toMatchObject({ temporaryRemoved: 1 })
    expect(await fs.readdir(path.join(storage, 'tmp'))).toEqual(['writing'])
  })

  it('works through more rows than one batch', async () => {
    const janitor = new BlobJanitor(db(), blobs(), () => clock, { batchSize: 2 })
    const keys = await Promise.all([1, 2, 3, 4, 5].map((n) => putBlob(`blob ${n}`)))
    for (const key of keys) await queueGarbage(key, clock - 2 * HOUR)
    for (const n of [1, 2, 3]) await makeUpload(`exp${n}`, clock - 1, 1)
    for (const n of [1, 2, 3]) await blobs().putPart(`orph${n}`, 1, Readable.from([Buffer.from('x')]))
    // Everything above is old by the janitor's clock.
    clock += 2 * HOUR

    expect(await janitor.runOnce()).toEqual({
      garbageDeleted: 5,
      garbageFailed: 0,
      uploadsExpired: 3,
      orphanPartsDiscarded: 3,
      temporaryRemoved: 0,
    })
    for (const key of keys) expect(await blobs().size(key)).toBeNull()
    expect(await garbageKeys()).toEqual([])
    expect(await uploadRefs()).toEqual([])
    expect(await stagedRefs()).toEqual([])
  })

  it('does each deletion once when runs are asked for at the same time', async () => {
    const key = await putBlob()
    await queueGarbage(key, clock - 2 * HOUR)
    await makeUpload('exp1', clock - 1)
    const [a, b] = await Promise.all([s.container.janitor.runOnce(), s.container.janitor.runOnce()])
    expect(a).toMatchObject({ garbageDeleted: 1, uploadsExpired: 1 })
    expect(b).toMatchObject({ garbageDeleted: 0, uploadsExpired: 0 })
  })

  it('is harmless when two processes clean the same database at once', async () => {
    const other = new BlobJanitor(db(), blobs(), () => clock, { batchSize: 3 })
    const keys = await Promise.all([1, 2, 3, 4, 5, 6, 7].map((n) => putBlob(`blob ${n}`)))
    for (const key of keys) await queueGarbage(key, clock - 2 * HOUR)
    for (const n of [1, 2, 3, 4]) await makeUpload(`exp${n}`, clock - 1, 1)
    const reports = await Promise.all([s.container.janitor.runOnce(), other.runOnce()])
    expect(reports.every((r) => r.garbageFailed === 0)).toBe(true)
    // Both may clear the same row; between them every row and upload is gone.
    expect(reports[0].uploadsExpired + reports[1].uploadsExpired).toBeGreaterThanOrEqual(4)
    expect(await garbageKeys()).toEqual([])
    expect(await uploadRefs()).toEqual([])
    for (const key of keys) expect(await blobs().size(key)).toBeNull()
  })

  it('keeps the row of a blob the store failed to delete, for the next run', async () => {
    const key = await putBlob()
    await queueGarbage(key, clock - 2 * HOUR)
    const failing: BlobStore = Object.assign(Object.create(blobs()), {
      delete: () => Promise.reject(new Error('disk unavailable')),
    })
    const warn = vi.fn()
    const janitor = new BlobJanitor(db(), failing, () => clock, {
      logger: { warn, debug: vi.fn(), error: vi.fn() },
    })
    expect(await janitor.runOnce()).toMatchObject({ garbageDeleted: 0, garbageFailed: 1 })
    expect(warn).toHaveBeenCalledOnce()
    expect(await garbageKeys()).toEqual([key])
    expect(await s.container.janitor.runOnce()).toMatchObject({ garbageDeleted: 1 })
  })

  it.runIf(store === 's3')('leaves another node its upload in progress and its temporary files', async () => {
    // The other node: a janitor on the same database and bucket, with a DATA_DIR of its own.
    const s3 = s.container.config.blobs.s3!
    const client = createS3Client(s3)
    const elsewhere = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-other-node-'))
    try {
      const theirs = new S3BlobStore({ client, bucket: s3.bucket, prefix: s3.prefix, tmpDir: elsewhere })
      const other = new BlobJanitor(db(), theirs, () => clock, {
        lease: new JobLease(db(), 'blob-janitor', { leaseMs: 60_000, now: () => clock }),
      })
      // Staged through this node, its parts older than the grace period; and a temporary file of
      // this node's, as old.
      await makeUpload('live1', clock + 48 * HOUR)
      await fs.mkdir(path.join(storage, 'tmp'), { recursive: true })
      await fs.writeFile(path.join(storage, 'tmp', 'crashed'), 'half an export')
      await age(path.join(storage, 'tmp', 'crashed'), 2 * HOUR)
      clock += 2 * HOUR

      expect(await other.runOnce()).toEqual({
        garbageDeleted: 0,
        garbageFailed: 0,
        uploadsExpired: 0,
        orphanPartsDiscarded: 0,
        temporaryRemoved: 0,
      })
      expect(await stagedRefs()).toEqual(['live1'])
      expect(await fs.readdir(path.join(storage, 'tmp'))).toEqual(['crashed'])
      expect((await blobs().assemble('live1', [1, 2])).size).toBe(12)
      // This node's own janitor sweeps its own temporary file.
      expect(await s.container.janitor.runOnce()).toMatchObject({ temporaryRemoved: 1 })
    } finally {
      client.destroy()
      await fs.rm(elsewhere, { recursive: true, force: true })
    }
  })

  it('sweeps in one process at a time, and takes over from a process that died sweeping', async () => {
    const key = await putBlob()
    await queueGarbage(key, clock - 2 * HOUR)
    // Another process holds the lease, mid-run: this one's run leaves everything to it.
    const other = new JobLease(db(), 'blob-janitor', { leaseMs: 60_000, now: () => clock })
    let taken!: () => void
    let finish!: () => void
    const started = new Promise<void>((r) => {
      taken = r
    })
    const busy = other.hold(async () => {
      taken()
      await new Promise<void>((r) => {
        finish = r
      })
      return 'swept'
    })
    await started
    expect(await s.container.janitor.runOnce()).toMatchObject({ skipped: true, garbageDeleted: 0 })
    expect(await garbageKeys()).toEqual([key])
    expect(await blobs().size(key)).toBe(5)
    finish()
    expect(await busy).toBe('swept')
    const report = await s.container.janitor.runOnce()
    expect(report).toMatchObject({ garbageDeleted: 1 })
    expect(report.skipped).toBeUndefined()
    expect(await blobs().size(key)).toBeNull()

    // A process that died holding the lease: the others wait until it runs out, then sweep.
    const orphan = await putBlob()
    await queueGarbage(orphan, clock - 2 * HOUR)
    await db()
      .updateTable('job_leases')
      .set({ lease_owner: 'dead-node:1:0', lease_until: clock + 60_000 })
      .where('name', '=', 'blob-janitor')
      .execute()
    expect(await s.container.janitor.runOnce()).toMatchObject({ skipped: true })
    expect(await garbageKeys()).toEqual([orphan])
    clock += 60_001
    expect(await s.container.janitor.runOnce()).toMatchObject({ garbageDeleted: 1 })
    expect(await garbageKeys()).toEqual([])
    const lease = await db().selectFrom('job_leases').selectAll().executeTakeFirstOrThrow()
    expect(lease).toMatchObject({ name: 'blob-janitor', lease_owner: null, lease_until: null })
  })

  it('logs a failed background run instead of throwing, and stops cleanly', async () => {
    const broken: BlobStore = Object.assign(Object.create(blobs()), {
      sweepTemporary: () => Promise.reject(new Error('disk unavailable')),
    })
    const error = vi.fn()
    const janitor = new BlobJanitor(db(), broken, () => clock, {
      logger: { error, warn: vi.fn(), debug: vi.fn() },
    })
    janitor.start(5)
    await vi.waitFor(() => expect(error.mock.calls.length).toBeGreaterThanOrEqual(2), { timeout: 10_000 })
    await janitor.stop()
    expect(error.mock.calls[0]![1]).toBe('janitor run failed')
    // The container's janitor starts with the server and stops when it closes.
    await s.container.startBackground()
  })
})
