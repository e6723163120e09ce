import crypto from 'node:crypto'
import zlib from 'node:zlib'
import { beforeEach, describe, expect, it } from 'vitest'
import type { BlobStore } from '../src/blobs/blob-store.js'
import { queueChecksums } from '../src/checksums/checksum-queue.js'
import { ChecksumWorker } from '../src/checksums/checksum-worker.js'
import { bytes, download, filesUrl, md5, putBytes, target, uploaded, withChecksums } from './helpers/files.js'
import { call, dialects, useServer } from './helpers/server.js'

const crc32 = (b: Buffer | string) => zlib.crc32(b).toString(16).padStart(8, '0')
const POLL = { timeout: 20_000, interval: 20 }

/**
 * md5 and CRC-32 leave the request: `action=end` answers them as null and queues a job in its
 * transaction; a leased background job reads the blob once and writes them to the files that
 * still use it. A job outlives its process, is never done by two workers at once, and a file
 * replaced or deleted meanwhile simply loses its job.
 */
describe.each(dialects)('checksums after the upload (%s)', (dialect) => {
  /** Every blob the store was asked to checksum, in order. */
  const read: string[] = []

  const s = useServer(
    dialect,
    { CHECKSUM_LEASE_SECONDS: '1' },
    {
      wrapBlobStore: (store) =>
        new Proxy(store, {
          get(target, prop, receiver) {
            if (prop === 'checksums') {
              return (key: string, opts?: { signal?: AbortSignal }) => {
                read.push(key)
                return target.checksums(key, opts)
              }
            }
            const value = Reflect.get(target, prop, receiver)
            return typeof value === 'function' ? value.bind(target) : value
          },
        }),
    },
  )
  beforeEach(async () => {
    await s.container.checksums.start()
  })

  const jobs = () => s.container.db.selectFrom('checksum_jobs').selectAll().orderBy('id').execute()
  const row = (path: string) =>
    s.container.db
      .selectFrom('files')
      .selectAll()
      .where('path_lower', '=', path.toLowerCase())
      .executeTakeFirstOrThrow()

  it('answers null at the end of the upload, then the file gets its md5 and CRC-32', async () => {
    await s.container.checksums.stop()
    const content = bytes(200_000, 3)
    const ended = await uploaded(s, 'sums/late.bin', content)
    expect([ended.md5, ended.crc32]).toEqual([null, null])
    const r = await call(s, 'GET', filesUrl('sums/late.bin'), { key: s.adminKey })
    expect([r.status, r.body.md5, r.body.crc32]).toEqual([200, null, null])
    const key = (await row('sums/late.bin')).blob_key
    expect((await jobs()).map((j) => j.blob_key)).toEqual([key])

    await s.container.checksums.start()
    const file = await withChecksums(target(s), 'sums/late.bin')
    expect(file).toMatchObject({ size: content.length, md5: md5(content), crc32: crc32(content) })
    // SHA-256 in the same read, kept for file-aware webhooks (the File resource's stays null).
    expect((await row('sums/late.bin')).sha256).toBe(
      crypto.createHash('sha256').update(content).digest('hex'),
    )
    expect(file.sha256).toBeNull()
    await expect.poll(jobs, POLL).toEqual([])
    expect(read.filter((k) => k === key)).toHaveLength(1)
  })

  it('gives the download an ETag of its own before the md5 is known, and the md5 after', async () => {
    await s.container.checksums.stop()
    await uploaded(s, 'sums/tag.txt', 'first')
    const { mtime } = await row('sums/tag.txt')
    const link = async () =>
      (await call(s, 'GET', filesUrl('sums/tag.txt'), { key: s.adminKey })).body.download_uri
    const provisional = `"${Math.floor(mtime / 1000).toString(16)}-5"`
    expect((await fetch(await link())).headers.get('etag')).toBe(provisional)
    await s.container.checksums.start()
    await withChecksums(target(s), 'sums/tag.txt')
    expect((await fetch(await link())).headers.get('etag')).toBe(`"${md5('first')}"`)
    // A copy fetched before the md5 was known is still current: its download resumes.
    const range = await fetch(await link(), { headers: { 'If-Range': provisional, Range: 'bytes=1-2' } })
    expect([range.status, await range.text()]).toEqual([206, 'ir'])
  })

  it('finishes, in a new process, the job a stopped or crashed one left', async () => {
    await s.container.checksums.stop()
    await uploaded(s, 'sums/left.txt', 'left behind')
    await uploaded(s, 'sums/crashed.txt', 'claimed, then the process died')
    const keys = [(await row('sums/left.txt')).blob_key, (await row('sums/crashed.txt')).blob_key]
    // A claim whose process died: on PostgreSQL it runs out (one second here); on SQLite, which
    // one process owns, a new process voids it at start.
    await s.container.db
      .updateTable('checksum_jobs')
      .set({ lease_owner: 'dead-host:1:00000000', lease_until: Date.now() + 1000, attempts: 1 })
      .where('blob_key', '=', keys[1]!)
      .execute()
    expect((await jobs()).map((j) => j.blob_key).sort()).toEqual([...keys].sort())

    // What a restarted server runs: a worker of its own, on the same database and store.
    const next = new ChecksumWorker(s.container.db, s.container.blobs, Date.now, {
      concurrency: 2,
      leaseMs: 1000,
      pollMs: 50,
      releaseClaimsOnStart: s.container.database.dialect.singleProcess,
    })
    await next.start()
    try {
      expect((await withChecksums(target(s), 'sums/left.txt')).md5).toBe(md5('left behind'))
      expect((await withChecksums(target(s), 'sums/crashed.txt')).crc32).toBe(
        crc32('claimed, then the process died'),
      )
      await expect.poll(jobs, POLL).toEqual([])
    } finally {
      await next.stop()
    }
  })

  it('never writes the checksums of a blob the file no longer uses: replaced or deleted first', async () => {
    await s.container.checksums.stop()
    await uploaded(s, 'sums/replaced.txt', 'old bytes')
    const oldKey = (await row('sums/replaced.txt')).blob_key
    await uploaded(s, 'sums/replaced.txt', 'new bytes')
    await uploaded(s, 'sums/deleted.txt', 'soon gone')
    const deletedKey = (await row('sums/deleted.txt')).blob_key
    expect((await call(s, 'DELETE', filesUrl('sums/deleted.txt'), { key: s.adminKey })).status).toBe(204)
    // The janitor may even have removed the old bytes already.
    await s.container.janitor.runOnce()
    expect(await jobs()).toHaveLength(3)

    const before = read.length
    await s.container.checksums.start()
    await expect.poll(jobs, POLL).toEqual([])
    await s.container.checksums.idle()
    const file = await withChecksums(target(s), 'sums/replaced.txt')
    expect([file.md5, file.crc32]).toEqual([md5('new bytes'), crc32('new bytes')])
    // Jobs whose blob no file uses end without reading it.
    expect(read.slice(before)).not.toContain(oldKey)
    expect(read.slice(before)).not.toContain(deletedKey)
  })

  it('copies known checksums with the file, and computes those of a copy made before they were known', async () => {
    await uploaded(s, 'sums/known.txt', 'known')
    await withChecksums(target(s), 'sums/known.txt')
    const copied = await call(s, 'POST', `/file_actions/copy/${encodeURIComponent('sums/known.txt')}`, {
      key: s.adminKey,
      body: { destination: 'sums/known-copy.txt' },
    })
    expect(copied.status).toBe(201)
    expect(await row('sums/known-copy.txt')).toMatchObject({ md5: md5('known'), crc32: crc32('known') })
    expect(await jobs()).toEqual([])

    await s.container.checksums.stop()
    await uploaded(s, 'sums/unknown.txt', 'not yet')
    const again = await call(s, 'POST', `/file_actions/copy/${encodeURIComponent('sums/unknown.txt')}`, {
      key: s.adminKey,
      body: { destination: 'sums/unknown-copy.txt' },
    })
    expect(again.status).toBe(201)
    expect((await row('sums/unknown-copy.txt')).md5).toBeNull()
    expect(await jobs()).toHaveLength(2)
    await s.container.checksums.start()
    expect((await withChecksums(target(s), 'sums/unknown-copy.txt')).md5).toBe(md5('not yet'))
    expect((await withChecksums(target(s), 'sums/unknown.txt')).md5).toBe(md5('not yet'))
  })

  it('reads each blob once when several workers share the database', async () => {
    await s.container.checksums.stop()
    const paths = Array.from({ length: 12 }, (_, i) => `sums/shared/${i}.bin`)
    for (const [i, p] of paths.entries()) await uploaded(s, p, bytes(5000 + i, i))
    const keys = new Set<string | null>()
    for (const p of paths) keys.add((await row(p)).blob_key)
    const before = read.length
    const workers = [1, 2, 3].map(
      () =>
        new ChecksumWorker(s.container.db, s.container.blobs, Date.now, {
          concurrency: 2,
          leaseMs: 30_000,
          pollMs: 20,
        }),
    )
    for (const w of workers) await w.start()
    try {
      await expect.poll(jobs, POLL).toEqual([])
      for (const w of workers) await w.idle()
    } finally {
      for (const w of workers) await w.stop()
    }
    const done = read.slice(before)
    expect(done.sort()).toEqual([...keys].sort())
    for (const [i, p] of paths.entries()) expect((await row(p)).md5).toBe(md5(bytes(5000 + i, i)))
  })

  it('tries a blob that cannot be read again once its lease has run out', async () => {
    await s.container.checksums.stop()
    await uploaded(s, 'sums/flaky.txt', 'flaky')
    const key = (await row('sums/flaky.txt')).blob_key!
    let failures = 1
    const flaky: BlobStore = Object.assign(Object.create(s.container.blobs), {
      checksums: (k: string, opts?: { signal?: AbortSignal }) => {
        if (k === key && failures-- > 0) return Promise.reject(new Error('the disk hiccuped'))
        return s.container.blobs.checksums(k, opts)
      },
    })
    const worker = new ChecksumWorker(s.container.db, flaky, Date.now, {
      concurrency: 1,
      leaseMs: 300,
      pollMs: 20,
    })
    await worker.start()
    try {
      expect((await withChecksums(target(s), 'sums/flaky.txt')).md5).toBe(md5('flaky'))
      expect(failures).toBe(-1)
      await expect.poll(jobs, POLL).toEqual([])
    } finally {
      await worker.stop()
    }
  })

  it('takes a job queued by another process at its next poll', async () => {
    await uploaded(s, 'sums/polled.txt', 'polled')
    await withChecksums(target(s), 'sums/polled.txt')
    await s.container.checksums.idle()
    // A job written as another process would write it: nothing wakes this process's worker.
    const { blob_key } = await row('sums/polled.txt')
    await s.container.db
      .updateTable('files')
      .set({ md5: null, crc32: null })
      .where('path_lower', '=', 'sums/polled.txt')
      .execute()
    await queueChecksums(s.container.db, [blob_key!], Date.now())
    expect((await withChecksums(target(s), 'sums/polled.txt')).md5).toBe(md5('polled'))
  })

  describe('Content-MD5 on a part', () => {
    const open = async (path: string) =>
      (await call(s, 'POST', filesUrl(path), { key: s.adminKey, body: { action: 'put' } })).body
    const end = (path: string, ref: string) =>
      call(s, 'POST', filesUrl(path), { key: s.adminKey, body: { action: 'end', ref } })
    const send = (uri: string, body: Buffer, contentMd5?: string) =>
      fetch(uri, { method: 'PUT', body, headers: contentMd5 ? { 'Content-MD5': contentMd5 } : {} })
    const b64 = (b: Buffer | string) => Buffer.from(md5(b), 'hex').toString('base64')

    it('stores a part whose bytes match its Content-MD5', async () => {
      const part = await open('md5/match.txt')
      const res = await send(part.upload_uri, Buffer.from('exact bytes'), b64('exact bytes'))
      expect(res.status).toBe(200)
      expect((await end('md5/match.txt', part.ref)).status).toBe(201)
      expect((await download(target(s), 'md5/match.txt')).toString()).toBe('exact bytes')
    })

    it('refuses a part whose bytes do not match with 400 invalid-body, keeping the earlier copy', async () => {
      const part = await open('md5/mismatch.txt')
      expect((await putBytes(part.upload_uri, Buffer.from('first'))).status).toBe(200)
      const big = bytes(300_000, 5)
      const res = await send(part.upload_uri, big, b64(Buffer.from('something else')))
      const body = (await res.json()) as { type: string; error: string }
      expect(res.status).toBe(400)
      expect(body.type).toBe('bad-request/invalid-body')
      expect(body.error).toContain(md5(big))
      expect((await end('md5/mismatch.txt', part.ref)).status).toBe(201)
      expect((await download(target(s), 'md5/mismatch.txt')).toString()).toBe('first')
    })

    it('refuses a malformed Content-MD5 with 400 request-params-invalid before reading the part', async () => {
      const part = await open('md5/malformed.txt')
      for (const bad of ['not base64', md5('x'), 'AAAA']) {
        const res = await send(part.upload_uri, Buffer.from('x'), bad)
        expect([res.status, ((await res.json()) as { type: string }).type]).toEqual([
          400,
          'bad-request/request-params-invalid',
        ])
      }
      const parts = await s.container.db.selectFrom('upload_parts').selectAll().execute()
      expect(parts.filter((p) => p.part_number === 1 && p.size === 1)).toEqual([])
    })
  })
})
