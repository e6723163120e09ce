import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import zlib from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { loadConfig } from '../src/config.js'
import { createContainer } from '../src/container.js'
import { createLogger } from '../src/logger.js'
import {
  beginUpload,
  download,
  encAll,
  endUpload,
  md5,
  partUrl,
  putBytes,
  target,
  uploadFile,
  withChecksums,
} from './helpers/files.js'
import { fetchCsvRows, readyHistoryExport } from './helpers/history-export-fixtures.js'
import { captureLog } from './helpers/log-capture.js'
import { countRequests, serverClient } from './helpers/s3-requests.js'
import { S3_CREDENTIALS, type S3TestServer, startS3Server } from './helpers/s3-server.js'
import { call, dialects, expectError, useServer } from './helpers/server.js'

const MiB = 1024 * 1024
const HOUR = 3600_000
const crc32 = (b: Buffer) => zlib.crc32(b).toString(16).padStart(8, '0')

let s3: S3TestServer
let bucket: string

beforeAll(async () => {
  s3 = await startS3Server()
  bucket = await s3.bucket()
  // As an operator would: credentials in the environment, found by the SDK's default chain.
  vi.stubEnv('AWS_ACCESS_KEY_ID', S3_CREDENTIALS.accessKeyId)
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3_CREDENTIALS.secretAccessKey)
})
afterAll(async () => {
  vi.unstubAllEnvs()
  await s3?.close()
})

describe.each(dialects)('Wharf with BLOB_STORE=s3 (%s)', (dialect) => {
  let skew = 0
  const prefix = `site-${dialect}/`

  const s = useServer(
    dialect,
    // The S3 server is up only once the file's own set-up has run.
    () => ({
      BLOB_STORE: 's3',
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: bucket,
      S3_PREFIX: prefix,
      S3_FORCE_PATH_STYLE: 'true',
      // Every byte through Wharf: the proxy mode's own behaviour.
      S3_TRANSFER_MODE: 'proxy',
    }),
    { now: () => Date.now() + skew },
  )

  const keys = (under: string) => s3.keys(bucket, `${prefix}${under}`)
  const fileRow = (path: string) =>
    s.container.db.selectFrom('files').select('blob_key').where('path', '=', path).executeTakeFirst()
  /** The bytes behind a File's download_uri, with a Range header. */
  async function ranged(path: string, range: string): Promise<Response> {
    const meta = await call(s, 'GET', `/files/${encAll(path)}`, { key: s.adminKey })
    expect(meta.status).toBe(200)
    return fetch(meta.body.download_uri as string, { headers: { Range: range } })
  }

  it('uploads in parts, serves ranges, copies, moves and deletes, the bytes kept in the bucket', async () => {
    // Parts of 5 MiB and more with a small last one (assembled server-side where the server can),
    // and small parts of any size (streamed through Wharf).
    const big = [crypto.randomBytes(5 * MiB + 3), crypto.randomBytes(5 * MiB), crypto.randomBytes(1234)]
    const small = [crypto.randomBytes(700), crypto.randomBytes(1), crypto.randomBytes(300_000)]
    for (const [path, parts] of [
      ['s3/big.bin', big],
      ['s3/small.bin', small],
    ] as const) {
      const whole = Buffer.concat(parts)
      const { end } = await uploadFile(s, path, [...parts], { order: [2, 0, 1] })
      expect(end.status, end.text).toBe(201)
      // Read back from the bucket by the checksum job, after the upload.
      expect(await withChecksums(target(s), path)).toMatchObject({
        size: whole.length,
        md5: md5(whole),
        crc32: crc32(whole),
      })
      expect(md5(await download(target(s), path))).toBe(md5(whole))
      const row = await fileRow(path)
      expect(await keys('blobs/')).toContain(row!.blob_key)
    }
    // Nothing staged is left once both uploads ended and their parts were discarded.
    expect(await keys('parts/')).toEqual([])

    const whole = Buffer.concat(big)
    // A range across the boundary of the first two parts, and one at the very end.
    const across = await ranged('s3/big.bin', `bytes=${5 * MiB - 5}-${5 * MiB + 10}`)
    expect(across.status).toBe(206)
    expect(across.headers.get('content-range')).toBe(`bytes ${5 * MiB - 5}-${5 * MiB + 10}/${whole.length}`)
    expect(Buffer.from(await across.arrayBuffer()).equals(whole.subarray(5 * MiB - 5, 5 * MiB + 11))).toBe(
      true,
    )
    const tail = await ranged('s3/big.bin', 'bytes=-10')
    expect(tail.status).toBe(206)
    expect(Buffer.from(await tail.arrayBuffer()).equals(whole.subarray(whole.length - 10))).toBe(true)
    const first = await ranged('s3/big.bin', 'bytes=0-0')
    expect(first.status).toBe(206)
    expect(Buffer.from(await first.arrayBuffer()).equals(whole.subarray(0, 1))).toBe(true)

    const copied = await call(s, 'POST', `/file_actions/copy/${encAll('s3/big.bin')}`, {
      key: s.adminKey,
      body: { destination: 's3/copy.bin' },
    })
    expect(copied.status).toBe(201)
    const original = (await fileRow('s3/big.bin'))!.blob_key!
    const copy = (await fileRow('s3/copy.bin'))!.blob_key!
    expect(copy).not.toBe(original)
    expect(await keys('blobs/')).toEqual(expect.arrayContaining([original, copy]))
    expect(md5(await download(target(s), 's3/copy.bin'))).toBe(md5(whole))

    const moved = await call(s, 'POST', `/file_actions/move/${encAll('s3/copy.bin')}`, {
      key: s.adminKey,
      body: { destination: 's3/moved/copy.bin' },
    })
    expect(moved.status).toBe(201)
    // A move touches metadata only: the same object.
    expect((await fileRow('s3/moved/copy.bin'))!.blob_key).toBe(copy)
    expect(md5(await download(target(s), 's3/moved/copy.bin'))).toBe(md5(whole))
    expectError(
      await call(s, 'GET', `/files/${encAll('s3/copy.bin')}`, { key: s.adminKey }),
      404,
      'not-found/file-not-found',
    )

    const deleted = await call(s, 'DELETE', `/files/${encAll('s3/big.bin')}`, { key: s.adminKey })
    expect(deleted.status).toBe(204)
    // The object goes once the janitor's grace period is over, not before.
    expect(await s.container.janitor.runOnce()).toMatchObject({ garbageDeleted: 0 })
    expect(await keys('blobs/')).toContain(original)
    skew += 2 * HOUR
    expect(await s.container.janitor.runOnce()).toMatchObject({ garbageDeleted: 1, garbageFailed: 0 })
    expect(await keys('blobs/')).not.toContain(original)
    expect(md5(await download(target(s), 's3/moved/copy.bin'))).toBe(md5(whole))
  })

  it('removes the staged objects of an abandoned upload, and keeps those of a live one', async () => {
    const t = target(s)
    const abandoned = await beginUpload(t, 's3/abandoned.bin')
    expect(
      (
        await putBytes(
          (
            await partUrl(t, 's3/abandoned.bin', abandoned.ref, 1)
          ).upload_uri,
          Buffer.from('one'),
        )
      ).status,
    ).toBe(200)
    expect(
      (
        await putBytes(
          (
            await partUrl(t, 's3/abandoned.bin', abandoned.ref, 2)
          ).upload_uri,
          Buffer.from('two'),
        )
      ).status,
    ).toBe(200)
    expect(await keys(`parts/${abandoned.ref}/`)).toEqual(['1', '2'])

    // Past the abandoned upload's expiry; a new upload begins then.
    skew += (s.container.config.files.uploadExpiryMinutes + 1) * 60_000
    const live = await beginUpload(t, 's3/live.bin')
    expect(
      (await putBytes((await partUrl(t, 's3/live.bin', live.ref, 1)).upload_uri, Buffer.from('live'))).status,
    ).toBe(200)

    expect(await s.container.janitor.runOnce()).toMatchObject({ uploadsExpired: 1 })
    expect(await keys(`parts/${abandoned.ref}/`)).toEqual([])
    expect(await keys(`parts/${live.ref}/`)).toEqual(['1'])
    // The abandoned upload is gone for its client too; the live one still ends.
    expectError(await endUpload(t, 's3/abandoned.bin', abandoned.ref), 404, 'not-found/file-upload-not-found')
    const end = await endUpload(t, 's3/live.bin', live.ref)
    expect(end.status).toBe(201)
    expect((await withChecksums(t, 's3/live.bin')).md5).toBe(md5('live'))
  })

  it('discards staged objects no upload owns once they are an hour old', async () => {
    skew = 0
    await s.container.blobs.putPart('orphan-s3', 1, Readable.from([Buffer.from('left behind by a crash')]))
    expect(await s.container.janitor.runOnce()).toMatchObject({ orphanPartsDiscarded: 0 })
    expect(await keys('parts/orphan-s3/')).toEqual(['1'])
    skew = HOUR + 60_000
    expect(await s.container.janitor.runOnce()).toMatchObject({ orphanPartsDiscarded: 1 })
    expect(await keys('parts/')).toEqual([])
  })

  it('builds a history export into the bucket and serves its CSV from there', async () => {
    skew = 0
    const e = await readyHistoryExport(s, { query_folder: 's3' }, { key: s.adminKey })
    const row = await s.container.db
      .selectFrom('exports')
      .select(['blob_key', 'result_count'])
      .where('id', '=', e.id)
      .executeTakeFirstOrThrow()
    expect(await keys('blobs/')).toContain(row.blob_key)
    const { rows } = await fetchCsvRows(e.results_url)
    // The header, then one row per record: the uploads, copy, move and delete above.
    expect(row.result_count).toBeGreaterThanOrEqual(5)
    expect(rows).toHaveLength(row.result_count! + 1)
    expect(rows.flat()).toContain('s3/moved/copy.bin')
  })

  it('streams parts sent with their length into S3 as they arrive, and ends with one completion', async () => {
    skew = 0
    const t = target(s)
    const p = 's3/streamed.bin'
    const a = crypto.randomBytes(5 * MiB + 1)
    const b = crypto.randomBytes(10)
    const up = await beginUpload(t, p)
    const second = await partUrl(t, p, up.ref, 2)
    const sent = countRequests(serverClient(s.container.blobs))
    // fetch sends a Buffer with its Content-Length.
    expect((await putBytes(up.upload_uri, a)).status).toBe(200)
    // The upload's multipart upload opened, with its marker; the part sent on in one request.
    expect(sent.map((r) => r.command)).toEqual([
      'ListObjectsV2Command',
      'CreateMultipartUploadCommand',
      'PutObjectCommand',
      'UploadPartCommand',
      'DeleteObjectsCommand',
    ])
    // The small last part is staged, as any part under 5 MiB.
    expect((await putBytes(second.upload_uri, b)).status).toBe(200)
    sent.length = 0
    const end = await endUpload(t, p, up.ref)
    expect(end.status, end.text).toBe(201)
    // Part 1 is never read back: only the small staged part is added before the completion (the
    // checksum job reads the finished object, perhaps before the answer).
    const reads = sent.filter((r) => r.command === 'GetObjectCommand' && r.key?.includes('/parts/'))
    expect(reads.map((r) => r.key)).toEqual([`${prefix}parts/${up.ref}/2`])
    expect(sent.filter((r) => r.command === 'CompleteMultipartUploadCommand')).toHaveLength(1)
    expect(end.body.size).toBe(a.length + b.length)
    expect((await download(t, p)).equals(Buffer.concat([a, b]))).toBe(true)
    expect((await withChecksums(t, p)).md5).toBe(md5(Buffer.concat([a, b])))
    // Nothing is left of the upload in the bucket but the file's object.
    expect(await keys(`parts/${up.ref}/`)).toEqual([])
  })

  it('refuses a part whose bytes do not match its Content-MD5, and stages nothing of it', async () => {
    skew = 0
    const t = target(s)
    const up = await beginUpload(t, 's3/digest.bin')
    const uri = (await partUrl(t, 's3/digest.bin', up.ref, 1)).upload_uri
    const digest = (b: Buffer | string) => Buffer.from(md5(b), 'hex').toString('base64')
    // The staged objects, without the marker of the upload's multipart upload.
    const staged = async () => (await keys(`parts/${up.ref}/`)).filter((k) => !k.startsWith('direct/'))
    // 6 MiB with its length: streamed into the upload's multipart upload as it arrives, all but
    // its last bytes sent before the md5 is known.
    const res = await fetch(uri, {
      method: 'PUT',
      body: crypto.randomBytes(6 * MiB),
      headers: { 'Content-MD5': digest('other bytes') },
    })
    expect(res.status).toBe(400)
    expect(((await res.json()) as { type: string }).type).toBe('bad-request/invalid-body')
    expect(await staged()).toEqual([])
    // S3 kept no part of it either.
    expect((await s.container.blobs.planAssembly!(up.ref)).directParts).toEqual([])
    const body = Buffer.from('matching bytes')
    const ok = await fetch(uri, { method: 'PUT', body, headers: { 'Content-MD5': digest(body) } })
    expect(ok.status).toBe(200)
    expect(await staged()).toEqual(['1'])
    expect((await endUpload(t, 's3/digest.bin', up.ref)).status).toBe(201)
    expect((await withChecksums(t, 's3/digest.bin')).md5).toBe(md5(body))
  })
})

describe('start-up on BLOB_STORE=s3', () => {
  it('says which store is in use and where, never the credentials', async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-s3-start-'))
    const log = captureLog()
    const config = loadConfig({
      DATA_DIR: dataDir,
      BLOB_STORE: 's3',
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: bucket,
      S3_PREFIX: 'start-up',
      S3_FORCE_PATH_STYLE: 'true',
    })
    const container = await createContainer(config, { logger: createLogger('info', log.stream) })
    try {
      expect(log.records().filter((r) => r['blobStore'] !== undefined)).toEqual([
        expect.objectContaining({
          blobStore: 's3',
          endpoint: s3.endpoint,
          region: 'us-east-1',
          bucket,
          prefix: 'start-up/',
          msg: 'file bytes are stored in an S3 bucket',
        }),
      ])
      expect(log.lines.join('\n')).not.toContain(S3_CREDENTIALS.secretAccessKey)
      expect(log.lines.join('\n')).not.toContain('AWS_SECRET_ACCESS_KEY')
    } finally {
      await container.close()
      await fs.rm(dataDir, { recursive: true, force: true })
    }
  })
})
