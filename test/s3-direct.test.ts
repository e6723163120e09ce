import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import tls from 'node:tls'
import zlib from 'node:zlib'
import { ListPartsCommand } from '@aws-sdk/client-s3'
import Files from 'files.com/lib/Files.js'
import File from 'files.com/lib/models/File.js'
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest'
import { contentDisposition } from '../src/api/content-disposition.js'
import { createS3Client } from '../src/blobs/s3/s3-client.js'
import { S3DirectBlobStore } from '../src/blobs/s3/s3-direct-store.js'
import { FileSystem } from '../src/modules/files/vfs/file-system.js'
import {
  beginUpload,
  encAll,
  endUpload,
  md5,
  partUrl,
  putBytes,
  target,
  uploaded,
  withChecksums,
} from './helpers/files.js'
import { countRequests, serverClient } from './helpers/s3-requests.js'
import { S3_CREDENTIALS, type S3TestServer, startS3Server } from './helpers/s3-server.js'
import { call, dialects, expectError, useServer } from './helpers/server.js'
import { startTlsFront, type TlsFront } from './helpers/tls-front.js'
import { type Recorder, resetSdk, startRecorder } from './sdk/sdk.js'

/**
 * BLOB_STORE=s3 in direct mode (the default): part URLs are presigned UploadPart URLs and
 * download_uri a presigned GetObject URL of the bucket, so file bytes never pass through Wharf.
 *
 * The bucket is s3rver behind an HTTPS front (the files.com SDK downloads with `https.get`).
 * What s3rver lacks, and so what these tests cannot show: it checks a presigned URL's key and
 * expiry but not its SigV4 signature (S3 refuses a changed one with SignatureDoesNotMatch), does
 * not enforce the 5 MiB minimum of every part but the last (the parts here are small), and has
 * no UploadPartCopy, so copies beyond 5 GiB are not exercised. ListParts and
 * AbortMultipartUpload, which it lacks too, are added by the test server (s3rver-multipart.mjs).
 */

const HOUR = 3600_000
const PART_SIZE = 96 * 1024
const crc32 = (b: Buffer) => zlib.crc32(b).toString(16).padStart(8, '0')

let s3: S3TestServer
let front: TlsFront
let bucket: string
let defaultCas: string[]

beforeAll(async () => {
  s3 = await startS3Server()
  front = await startTlsFront(s3.endpoint)
  bucket = await s3.bucket()
  // Wharf's S3 client, the SDK's https.get and fetch all trust the front's certificate.
  defaultCas = tls.getCACertificates('default')
  tls.setDefaultCACertificates([...defaultCas, front.cert])
  vi.stubEnv('AWS_ACCESS_KEY_ID', S3_CREDENTIALS.accessKeyId)
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3_CREDENTIALS.secretAccessKey)
})
afterAll(async () => {
  vi.unstubAllEnvs()
  if (defaultCas) tls.setDefaultCACertificates(defaultCas)
  await front?.close()
  await s3?.close()
})

describe.each(dialects)('BLOB_STORE=s3 in direct mode (%s)', (dialect) => {
  let rec: Recorder
  let skew = 0
  let tmp: string
  const prefix = `direct-${dialect}/`

  const s = useServer(
    dialect,
    // The S3 front is up only once the file's own set-up has run.
    () => ({
      BLOB_STORE: 's3',
      S3_ENDPOINT: front.url,
      S3_BUCKET: bucket,
      S3_PREFIX: prefix,
      S3_FORCE_PATH_STYLE: 'true',
      UPLOAD_PART_SIZE: String(PART_SIZE),
    }),
    { now: () => Date.now() + skew },
  )
  beforeAll(async () => {
    rec = await startRecorder(s.url)
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-s3-direct-'))
  })
  afterAll(async () => {
    await rec?.close()
    if (tmp) await fs.rm(tmp, { recursive: true, force: true })
  })
  beforeEach(() => {
    skew = 0
    resetSdk(rec.url)
    Files.setApiKey(s.adminKey)
    rec.requests.length = 0
  })

  const keys = (under: string) => s3.keys(bucket, `${prefix}${under}`)
  const t = () => target(s)
  const bucketUrl = () => `${front.url}/${bucket}/${prefix}`

  /** The admin's SFTP writer of `path` (parts of 50,000 bytes), with `data` written 40,000 at a time. */
  async function protocolWriter(path: string, data: Buffer) {
    const c = s.container
    const admin = (
      await c.services.protocolLogin.password(c.site.id, {
        username: 'admin',
        password: 'admin-password-1',
        ip: '127.0.0.1',
        interface: 'sftp',
      })
    ).principal
    const files = new FileSystem({ ...c.services, blobs: c.blobs, now: c.now, writerPartBytes: 50_000 }).as(
      admin,
      'sftp',
    )
    const w = await files.createWriter(path, { mkdirParents: true })
    for (let i = 0; i < data.length; i += 40_000) await w.write(data.subarray(i, i + 40_000))
    return w
  }

  it('the files.com SDK uploads its parts straight to the bucket and downloads from it', async () => {
    const p = `sdk-${crypto.randomBytes(4).toString('hex')}/random.bin`
    const bytes = crypto.randomBytes(300 * 1024)
    const local = path.join(tmp, 'random.bin')
    await fs.writeFile(local, bytes)

    const up = await File.uploadFile(p, local)
    expect(up.size).toBe(bytes.length)
    // The checksums come after the upload, from one read of the object in the bucket.
    const summed = await withChecksums(t(), p)
    expect(summed.md5).toBe(md5(bytes))
    expect(summed.crc32).toBe(crc32(bytes))
    // Wharf saw the steps, never a part: four parts were asked for and PUT elsewhere.
    const toWharf = rec.requests.map((r) => r.method)
    expect(toWharf).not.toContain('PUT')
    const steps = rec.requests.map((r) => JSON.parse(r.body || '{}').action).filter(Boolean)
    expect(steps).toEqual(['put', 'put', 'put', 'put', 'put', 'end'])
    // Only the published blob is left: the multipart upload's marker went with the upload.
    const row = await s.container.db
      .selectFrom('files')
      .select('blob_key')
      .where('path', '=', p)
      .executeTakeFirstOrThrow()
    expect(await keys('')).toContain(`blobs/${row.blob_key}`)
    expect((await keys('parts/')).length).toBe(0)

    const found = await File.find(p)
    const withLink = await found.download()
    expect(withLink.download_uri?.startsWith(bucketUrl())).toBe(true)
    const out = path.join(tmp, 'random.out')
    await withLink.downloadToFile(out)
    expect((await fs.readFile(out)).equals(bytes)).toBe(true)
  })

  it('hands out presigned UploadPart URLs, several parts in any order, the last copy of a part counting', async () => {
    const p = 'direct/parts.bin'
    const bytes = crypto.randomBytes(3 * PART_SIZE + 1234)
    const first = await beginUpload(t(), p, {})
    expect(first.upload_uri.startsWith(bucketUrl())).toBe(true)
    const url = new URL(first.upload_uri)
    expect(url.searchParams.get('partNumber')).toBe('1')
    expect(url.searchParams.get('X-Amz-Expires')).toBe(String(s.container.config.files.uploadUrlSeconds))
    // The same expiry as Wharf's own links, in the resource too.
    const expires = Date.parse(first.expires as string)
    expect(Math.abs(expires - (Date.now() + s.container.config.files.uploadUrlSeconds * 1000))).toBeLessThan(
      5000,
    )

    const parts = [0, 1, 2, 3].map((i) => bytes.subarray(i * PART_SIZE, (i + 1) * PART_SIZE))
    const uris = [first.upload_uri]
    for (let n = 2; n <= 4; n++) uris.push((await partUrl(t(), p, first.ref, n)).upload_uri)
    // Part 3 first with wrong bytes, then every part in reverse order: part 3 sent again counts.
    expect((await putBytes(uris[2]!, Buffer.from('wrong bytes'))).status).toBe(200)
    for (const i of [3, 2, 1, 0]) expect((await putBytes(uris[i]!, parts[i]!)).status).toBe(200)

    const end = await endUpload(t(), p, first.ref)
    expect(end.status, end.text).toBe(201)
    expect(end.body).toMatchObject({ size: bytes.length })
    expect(await withChecksums(t(), p)).toMatchObject({ md5: md5(bytes), crc32: crc32(bytes) })
  })

  it('ends an upload with a missing part as the proxy mode does: 400 invalid-upload-part-gap, the upload kept', async () => {
    const p = 'direct/gap.bin'
    const a = crypto.randomBytes(PART_SIZE)
    const b = crypto.randomBytes(PART_SIZE)
    const c = crypto.randomBytes(10)
    const first = await beginUpload(t(), p, {})
    const third = await partUrl(t(), p, first.ref, 3)
    expect((await putBytes(first.upload_uri, a)).status).toBe(200)
    expect((await putBytes(third.upload_uri, c)).status).toBe(200)

    const gap = await endUpload(t(), p, first.ref)
    expectError(gap, 400, 'bad-request/invalid-upload-part-gap')
    expect(gap.body.error).toBe('Part 2 was never uploaded, but part 3 was')

    // The missing part sent, the same upload ends.
    const second = await partUrl(t(), p, first.ref, 2)
    expect((await putBytes(second.upload_uri, b)).status).toBe(200)
    const end = await endUpload(t(), p, first.ref)
    expect(end.status, end.text).toBe(201)
    expect((await withChecksums(t(), p)).md5).toBe(md5(Buffer.concat([a, b, c])))
    // Ended: its ref is gone, as in proxy mode.
    expectError(await endUpload(t(), p, first.ref), 404, 'not-found/file-upload-not-found')
  })

  it('makes an empty file of an upload no part was sent to', async () => {
    const first = await beginUpload(t(), 'direct/empty.txt', {})
    const end = await endUpload(t(), 'direct/empty.txt', first.ref)
    expect(end.status, end.text).toBe(201)
    expect(end.body).toMatchObject({ size: 0, md5: md5(Buffer.alloc(0)), crc32: '00000000' })
  })

  it('serves download_uri from the bucket with Range and the RFC 5987 Content-Disposition', async () => {
    const name = 'résumé "final" (1).txt'
    const p = `direct/${name}`
    const bytes = Buffer.from('0123456789abcdefghij')
    await uploaded(s, p, bytes)
    const meta = await call(s, 'GET', `/files/${encAll(p)}`, { key: s.adminKey })
    expect(meta.status).toBe(200)
    const uri = meta.body.download_uri as string
    expect(uri.startsWith(bucketUrl())).toBe(true)
    expect(new URL(uri).searchParams.get('X-Amz-Expires')).toBe(
      String(s.container.config.files.downloadUrlSeconds),
    )

    const whole = await fetch(uri)
    expect(whole.status).toBe(200)
    expect(whole.headers.get('content-disposition')).toBe(contentDisposition(name))
    expect(Buffer.from(await whole.arrayBuffer()).equals(bytes)).toBe(true)

    const ranged = await fetch(uri, { headers: { Range: 'bytes=5-9' } })
    expect(ranged.status).toBe(206)
    expect(ranged.headers.get('content-range')).toBe(`bytes 5-9/${bytes.length}`)
    expect(await ranged.text()).toBe('56789')
    const tail = await fetch(uri, { headers: { Range: 'bytes=15-' } })
    expect(tail.status).toBe(206)
    expect(await tail.text()).toBe('fghij')

    // action=redirect leads there too.
    const redirect = await fetch(`${s.api}/files/${encAll(p)}?action=redirect`, {
      headers: { 'X-ServiceAPI-Key': s.adminKey },
      redirect: 'manual',
    })
    expect(redirect.status).toBe(302)
    expect(redirect.headers.get('location')?.startsWith(bucketUrl())).toBe(true)
  })

  it('records the read as it hands out a direct link (Wharf never sees the download), none for action=stat', async () => {
    const p = 'direct/read.txt'
    await uploaded(s, p, 'read me')
    const reads = () =>
      s.container.db
        .selectFrom('actions')
        .select(['user_id', 'interface'])
        .where('path', '=', p)
        .where('action', '=', 'read')
        .execute()
    expect(await reads()).toHaveLength(0)
    expect((await call(s, 'GET', `/files/${encAll(p)}?action=stat`, { key: s.adminKey })).status).toBe(200)
    expect((await call(s, 'GET', `/file_actions/metadata/${encAll(p)}`, { key: s.adminKey })).status).toBe(
      200,
    )
    expect(await reads()).toHaveLength(0)
    const meta = await call(s, 'GET', `/files/${encAll(p)}`, { key: s.adminKey })
    expect(await reads()).toHaveLength(1)
    // Fetching the bytes from the bucket, even in pieces, adds nothing.
    await (await fetch(meta.body.download_uri as string)).text()
    await (await fetch(meta.body.download_uri as string, { headers: { Range: 'bytes=2-3' } })).text()
    expect(await reads()).toHaveLength(1)
  })

  it('the bucket refuses an expired or altered presigned URL', async () => {
    const p = 'direct/expiring.txt'
    await uploaded(s, p, 'expiring bytes')
    // Signed two hours ago, valid for one: expired.
    skew = -2 * HOUR
    const old = await call(s, 'GET', `/files/${encAll(p)}`, { key: s.adminKey })
    const oldPart = await beginUpload(t(), 'direct/late.txt', {})
    skew = 0
    const expired = await fetch(old.body.download_uri as string)
    expect(expired.status).toBe(403)
    expect(await expired.text()).toContain('<Code>AccessDenied</Code>')
    const late = await putBytes(oldPart.upload_uri, Buffer.from('late'))
    expect(late.status).toBe(403)
    expect(late.text).toContain('<Code>AccessDenied</Code>')
    // Nothing reached the upload: it ends as an empty file.
    expect((await endUpload(t(), 'direct/late.txt', oldPart.ref)).body.size).toBe(0)

    // Another access key in the credential: not one the bucket knows.
    const fresh = await call(s, 'GET', `/files/${encAll(p)}`, { key: s.adminKey })
    const altered = new URL(fresh.body.download_uri as string)
    const credential = altered.searchParams.get('X-Amz-Credential')!
    altered.searchParams.set('X-Amz-Credential', credential.replace(/^[^/]+/, 'SOMEONEELSE'))
    const refused = await fetch(altered)
    expect(refused.status).toBe(403)
    expect(await refused.text()).toContain('<Code>InvalidAccessKeyId</Code>')
    // The unaltered link works.
    expect(await (await fetch(fresh.body.download_uri as string)).text()).toBe('expiring bytes')
  })

  it('the janitor aborts an abandoned direct upload, the parts sent to it included', async () => {
    const p = 'direct/abandoned.bin'
    const first = await beginUpload(t(), p, {})
    expect((await putBytes(first.upload_uri, crypto.randomBytes(1000))).status).toBe(200)
    const [marker] = await keys(`parts/${first.ref}/`)
    expect(marker).toMatch(/^direct\/[0-9a-f]{32}\/.+$/)
    const [, blobKey, uploadId] = marker!.split('/')
    const listParts = () =>
      s3.client.send(
        new ListPartsCommand({
          Bucket: bucket,
          Key: `${prefix}blobs/${blobKey}`,
          UploadId: decodeURIComponent(uploadId!),
        }),
      )
    expect((await listParts()).Parts?.map((x) => x.PartNumber)).toEqual([1])

    // Past UPLOAD_EXPIRY_MINUTES without a request about it.
    skew = (s.container.config.files.uploadExpiryMinutes + 1) * 60_000
    expect(await s.container.janitor.runOnce()).toMatchObject({ uploadsExpired: 1 })
    skew = 0
    await expect(listParts()).rejects.toMatchObject({ name: 'NoSuchUpload' })
    expect(await keys(`parts/${first.ref}/`)).toEqual([])
    expect(await keys(`blobs/${blobKey}`)).toEqual([])
    expectError(await endUpload(t(), p, first.ref), 404, 'not-found/file-upload-not-found')
  })

  it('the protocol front ends still stream their parts through Wharf, staged in the bucket', async () => {
    const data = crypto.randomBytes(120_001)
    const w = await protocolWriter('direct/sftp.bin', data)
    // The two full parts are staged through Wharf as objects of their own (the third is still
    // arriving), and no multipart upload was opened: no `direct/` marker among them.
    const staged = (await keys('parts/')).map((k) => k.split('/').slice(1).join('/'))
    expect(staged).toEqual(['1', '2'])
    const entry = await w.commit()
    expect(entry).toMatchObject({ size: data.length })
    expect((await withChecksums(t(), 'direct/sftp.bin')).md5).toBe(md5(data))
    expect(await keys('parts/')).toEqual([])
    const meta = await call(s, 'GET', `/files/${encAll('direct/sftp.bin')}`, { key: s.adminKey })
    expect(
      Buffer.from(await (await fetch(meta.body.download_uri as string)).arrayBuffer()).equals(data),
    ).toBe(true)
  })

  it('ties an upload to its multipart upload in the bucket: another process on the bucket ends it', async () => {
    // A second store on the same bucket and prefix, as another Wharf node would have.
    const client = createS3Client(s3.settings(bucket, prefix), S3_CREDENTIALS)
    onTestFinished(() => client.destroy())
    const other = new S3DirectBlobStore({
      client,
      bucket,
      prefix,
      tmpDir: path.join(tmp, 'other'),
    })
    const sent = countRequests(client)
    const first = await beginUpload(t(), 'direct/two-nodes.bin', {})
    const a = crypto.randomBytes(PART_SIZE)
    const b = crypto.randomBytes(100)
    expect((await putBytes(first.upload_uri, a)).status).toBe(200)
    // Part 2's URL from the other store: the same multipart upload.
    expect((await putBytes(await other.directPartUrl(first.ref, 2, 60), b)).status).toBe(200)
    // A part S3 does not hold is named, whoever asks.
    await expect(other.assemble(first.ref, [1, 2, 3])).rejects.toMatchObject({
      name: 'StagedPartError',
      partNumber: 3,
    })

    // A store that never saw the upload: one listing finds its marker, one ListParts its parts.
    const cold = new S3DirectBlobStore({ client, bucket, prefix, tmpDir: path.join(tmp, 'cold') })
    sent.length = 0
    const plan = await cold.planAssembly(first.ref)
    expect(plan).toEqual({
      key: expect.stringMatching(/^[0-9a-f]{32}$/),
      directParts: [
        { partNumber: 1, size: a.length },
        { partNumber: 2, size: b.length },
      ],
    })
    expect(sent.map((r) => r.command)).toEqual(['ListObjectsV2Command', 'ListPartsCommand'])
    // The assembly asks S3 nothing more than to complete the upload with the parts listed.
    sent.length = 0
    await expect(cold.assemble(first.ref, [1, 2, 3], undefined, plan.key!, plan)).rejects.toMatchObject({
      name: 'StagedPartError',
      partNumber: 3,
    })
    await expect(cold.assemble('another', [1], undefined, plan.key!, plan)).rejects.toThrow(
      `A plan for upload ${first.ref}, not another`,
    )
    expect(sent).toEqual([])
    const blob = await cold.assemble(first.ref, [1, 2], [a.length, b.length], plan.key!, plan)
    expect(blob).toEqual({ key: plan.key, size: a.length + b.length })
    expect(sent.map((r) => r.command)).toEqual(['CompleteMultipartUploadCommand'])
    expect(await other.checksums(blob.key)).toMatchObject({ md5: md5(Buffer.concat([a, b])) })
    // Completed: the upload is gone from S3, so Wharf's end answers as for a lost part.
    expectError(
      await endUpload(t(), 'direct/two-nodes.bin', first.ref),
      422,
      'processing-failure/file-not-uploaded',
    )
    await other.discardUpload(first.ref)
    expect(await keys(`parts/${first.ref}/`)).toEqual([])
    expect(await other.planAssembly(first.ref)).toEqual({ key: null, directParts: [] })
    await other.delete(blob.key)
  })

  it('ends an upload with one ListParts, and a protocol upload with one listing of its parts', async () => {
    // The server's own client: what action=end asks the bucket.
    const sent = countRequests(serverClient(s.container.blobs))
    const p = 'direct/counted.bin'
    const a = crypto.randomBytes(PART_SIZE)
    const b = crypto.randomBytes(10)
    const first = await beginUpload(t(), p, {})
    const second = await partUrl(t(), p, first.ref, 2)
    expect((await putBytes(first.upload_uri, a)).status).toBe(200)
    expect((await putBytes(second.upload_uri, b)).status).toBe(200)
    sent.length = 0
    const end = await endUpload(t(), p, first.ref)
    expect(end.status, end.text).toBe(201)
    const commands = sent.map((r) => r.command)
    expect(commands.filter((c) => c === 'ListPartsCommand')).toHaveLength(1)
    expect(commands.filter((c) => c === 'CompleteMultipartUploadCommand')).toHaveLength(1)
    expect((await withChecksums(t(), p)).md5).toBe(md5(Buffer.concat([a, b])))

    // A protocol writer's parts are staged through Wharf (no length): one listing of the staging
    // folder finds them and that there is no marker, and one more discards them after the end.
    const data = crypto.randomBytes(120_001)
    const w = await protocolWriter('direct/counted-sftp.bin', data)
    sent.length = 0
    await w.commit()
    const listings = sent.filter((r) => r.command === 'ListObjectsV2Command')
    expect(listings.map((r) => r.prefix)).toEqual([listings[0]!.prefix, listings[0]!.prefix])
    expect(listings[0]!.prefix).toMatch(/parts\/[A-Za-z0-9_-]+\/$/)
    expect(sent.map((r) => r.command)).not.toContain('ListPartsCommand')
    expect((await withChecksums(t(), 'direct/counted-sftp.bin')).md5).toBe(md5(data))
  })

  it('copies server-side (CopyObject) and serves the copy from its own object', async () => {
    await uploaded(s, 'direct/original.txt', 'copied bytes')
    const copy = await call(s, 'POST', `/file_actions/copy/${encAll('direct/original.txt')}`, {
      key: s.adminKey,
      body: { destination: 'direct/copy.txt' },
    })
    expect(copy.status, copy.text).toBe(201)
    // Read once the copy's checksums are known: a source copied before its own checksum job ran
    // gives its copy a job of its own.
    const meta = await withChecksums(t(), 'direct/copy.txt')
    expect(meta.md5).toBe(md5('copied bytes'))
    const res = await fetch(meta.download_uri as string)
    expect(res.headers.get('content-disposition')).toBe(contentDisposition('copy.txt'))
    expect(await res.text()).toBe('copied bytes')
  })
})
