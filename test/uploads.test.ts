import fs from 'node:fs/promises'
import http from 'node:http'
import https from 'node:https'
import { createRequire } from 'node:module'
import path from 'node:path'
import { Readable } from 'node:stream'
import zlib from 'node:zlib'
import Files from 'files.com/lib/Files.js'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import type { LocalBlobStore } from '../src/blobs/disk/local-blob-store.js'
import {
  bytes,
  download as downloadFile,
  filesUrl,
  md5,
  putPart,
  target,
  uploaded,
  uploadFile,
  withChecksums,
} from './helpers/files.js'
import { call, dialects, expectError, grant, makeKey, makeUser, useServer } from './helpers/server.js'
import { startTlsFront } from './helpers/tls-front.js'
import { resetSdk } from './sdk/sdk.js'

// The SDK's File model, untyped here: the SDK suite owns the SDK's type declarations.
const SdkFile = createRequire(import.meta.url)('files.com/lib/models/File.js').default

/** Polling for effects the server completes after answering (up to ~5 s). */
const POLL = { timeout: 5_000, interval: 50 }

const PART = 1024
const crc32 = (b: Buffer) => zlib.crc32(b).toString(16).padStart(8, '0')

describe.each(dialects)('uploads (%s)', (dialect) => {
  /** Added to the server's clock, to make signed links expire; it only grows. */
  let skew = 0
  let readonlyKey: string
  let writerKey: string
  let otherWriterKey: string
  let restrictedKey: string

  const open = (p: string, body: Record<string, unknown> = {}, key = s.adminKey) =>
    call(s, 'POST', filesUrl(p), { key, body: { action: 'put', ...body } })
  const end = (p: string, ref: string, key = s.adminKey, body: Record<string, unknown> = {}) =>
    call(s, 'POST', filesUrl(p), { key, body: { action: 'end', ref, ...body } })
  const download = (p: string) => downloadFile(target(s), p)
  const actionsFor = (p: string) =>
    s.container.db.selectFrom('actions').selectAll().where('path', '=', p).orderBy('id').execute()
  const garbage = async () =>
    (await s.container.db.selectFrom('blob_garbage').select('blob_key').execute()).map((r) => r.blob_key)
  const fileRow = (p: string) =>
    s.container.db
      .selectFrom('files')
      .selectAll()
      .where('path_lower', '=', p.toLowerCase())
      .executeTakeFirst()

  const s = useServer(dialect, { UPLOAD_PART_SIZE: String(PART) }, { now: () => Date.now() + skew })
  beforeAll(async () => {
    const reader = await makeUser(s)
    await grant(s, reader.id, 'shared', 'readonly')
    readonlyKey = (await makeKey(s, reader.id)).key
    const writer = await makeUser(s)
    await grant(s, writer.id, 'team', 'full')
    writerKey = (await makeKey(s, writer.id)).key
    const other = await makeUser(s)
    await grant(s, other.id, 'team', 'full')
    otherWriterKey = (await makeKey(s, other.id)).key
    const admin = await makeUser(s, { site_admin: true })
    restrictedKey = (await makeKey(s, admin.id, { path: 'inbox' })).key
  })

  describe('POST /files/{path} action=put', () => {
    it('refuses a new name ending in whitespace, as new folders and destinations are', async () => {
      const r = await open('notes /a.txt')
      expectError(r, 400, 'bad-request/request-param-path-cannot-have-trailing-whitespace')
      expectError(
        await open('notes/a.txt\u00a0'),
        400,
        'bad-request/request-param-path-cannot-have-trailing-whitespace',
      )
    })

    it('refuses to end an upload whose part lost bytes in a crash, and ends once it is sent again', async () => {
      const t = target(s)
      const first = await call(s, 'POST', filesUrl('crash/lost.bin'), {
        key: s.adminKey,
        body: { action: 'put' },
      })
      expect(first.status, first.text).toBe(201)
      const ref = first.body.ref as string
      const part = async (n: number) =>
        (
          await call(s, 'POST', filesUrl('crash/lost.bin'), {
            key: s.adminKey,
            body: { action: 'put', part: n, ref },
          })
        ).body.upload_uri as string
      const data = bytes(3 * PART)
      for (let n = 1; n <= 3; n++) {
        expect((await putPart(await part(n), data.subarray((n - 1) * PART, n * PART))).status).toBe(200)
      }
      // What a power cut can leave of a part that was acknowledged but not yet flushed.
      const storage = (s.container.blobs as LocalBlobStore).root
      await fs.truncate(path.join(storage, 'parts', ref, '2'), 100)
      expectError(await end('crash/lost.bin', ref), 422, 'processing-failure/file-not-uploaded')
      expect((await putPart(await part(2), data.subarray(PART, 2 * PART))).status).toBe(200)
      const ended = await end('crash/lost.bin', ref)
      expect(ended.status, ended.text).toBe(201)
      expect((await withChecksums(t, 'crash/lost.bin')).md5).toBe(md5(data))
      expect(md5(await downloadFile(t, 'crash/lost.bin'))).toBe(md5(data))
    })

    it('files a new upload under its folder as the folder is spelled', async () => {
      const made = await call(s, 'POST', '/folders/Spelled', { key: s.adminKey })
      expect(made.status, made.text).toBe(201)
      const file = await uploaded(s, 'spelled/Inner.txt', 'x')
      expect(file.path).toBe('Spelled/Inner.txt')
      expect((await fileRow('SPELLED/inner.TXT'))?.path).toBe('Spelled/Inner.txt')
    })

    it('opens an upload and describes part 1 as a FileUploadPart', async () => {
      const r = await open('docs/report.pdf')
      expect(r.status).toBe(201)
      expect(r.body).toEqual({
        send: {},
        action: 'put/write',
        ask_about_overwrites: false,
        available_parts: 10000,
        expires: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
        headers: {},
        http_method: 'PUT',
        next_partsize: PART,
        parallel_parts: true,
        retry_parts: true,
        parameters: {},
        part_number: 1,
        partsize: PART,
        path: 'docs/report.pdf',
        ref: expect.stringMatching(/^[0-9a-f]{32}$/),
        upload_uri: expect.any(String),
      })
      const uri = new URL(r.body.upload_uri)
      expect(`${uri.origin}${uri.pathname}`).toBe(`${s.api}/upload_parts/${r.body.ref}/1`)
      expect(Number(uri.searchParams.get('expires')) * 1000).toBe(Date.parse(r.body.expires))
      expect(uri.searchParams.get('signature')).toMatch(/^[A-Za-z0-9_-]{43}$/)
      const row = await s.container.db
        .selectFrom('uploads')
        .selectAll()
        .where('ref', '=', r.body.ref)
        .executeTakeFirstOrThrow()
      expect(row.path).toBe('docs/report.pdf')
      expect(row.user_id).toBeNull()
      expect(row.api_key_id).toEqual(expect.any(Number))
    })

    it('takes raw slashes and an optional path echo in the body as well', async () => {
      const r = await call(s, 'POST', '/files/raw/dir/x.txt', {
        key: s.adminKey,
        body: { action: 'put', path: 'raw/dir/x.txt', part: 3, size: 10, etags: [] },
      })
      expect(r.status).toBe(201)
      expect(r.body.path).toBe('raw/dir/x.txt')
      expect(r.body.part_number).toBe(3)
    })

    it('answers in XML with the file-upload-part root', async () => {
      const r = await call(s, 'POST', filesUrl('xml/part.bin'), {
        key: s.adminKey,
        body: { action: 'put' },
        accept: 'application/xml',
      })
      expect(r.status).toBe(201)
      expect(r.headers.get('content-type')).toMatch(/^application\/xml/)
      expect(r.text).toContain('<file-upload-part>')
      expect(r.text).toContain('<part_number type="integer">1</part_number>')
      expect(r.text).toContain('<parallel_parts type="boolean">true</parallel_parts>')
      expect(r.text).toContain('<http_method>PUT</http_method>')
      expect(r.text).toMatch(
        /<upload_uri>http:\/\/127\.0\.0\.1:\d+\/api\/rest\/v1\/upload_parts\/[0-9a-f]{32}\/1\?expires=\d+&amp;signature=/,
      )
    })

    it('describes another part of an upload given its ref, and keeps the upload alive', async () => {
      const first = await open('docs/more.txt')
      const before = await s.container.db
        .selectFrom('uploads')
        .select('expires_at')
        .where('ref', '=', first.body.ref)
        .executeTakeFirstOrThrow()
      // The clock only ever moves forward (the request rate limiter relies on it).
      skew += 60_000
      const r = await open('DOCS/More.txt', { ref: first.body.ref, part: 7 })
      expect(r.status).toBe(200)
      expect(r.body.part_number).toBe(7)
      expect(r.body.ask_about_overwrites).toBe(false)
      expect(r.body.upload_uri).toContain(`/upload_parts/${first.body.ref}/7?`)
      const after = await s.container.db
        .selectFrom('uploads')
        .select('expires_at')
        .where('ref', '=', first.body.ref)
        .executeTakeFirstOrThrow()
      expect(after.expires_at).toBeGreaterThan(before.expires_at)
    })

    it('refuses bad actions, part numbers and offsets', async () => {
      // action is required (the Swagger document says so): a request without it lacks a parameter.
      const none = await call(s, 'POST', filesUrl('a.txt'), { key: s.adminKey, body: {} })
      expectError(none, 400, 'bad-request/request-params-required')
      expect(none.body.error).toContain('action')
      expectError(
        await call(s, 'POST', filesUrl('a.txt'), { key: s.adminKey, body: { action: 'append' } }),
        400,
        'bad-request/request-params-invalid',
      )
      expectError(await open('a.txt', { part: 0 }), 400, 'bad-request/request-params-invalid')
      expectError(await open('a.txt', { part: 10001 }), 400, 'bad-request/part-number-too-large')
      expectError(await open('a.txt', { restart: 5 }), 400, 'bad-request/invalid-upload-offset')
      expectError(await open('a.txt', { structure: 'x' }), 400, 'bad-request/request-params-invalid')
      expectError(await open('a.txt', { provided_mtime: 'yesterday' }), 400, 'bad-request/datetime-parse')
      expectError(
        await call(s, 'POST', filesUrl('a.txt'), { key: s.adminKey, body: { action: 'end' } }),
        400,
        'bad-request/request-params-required',
      )
    })

    it('refuses bad paths: root, `..`, a folder, a file as a parent, a missing parent without mkdir_parents', async () => {
      expectError(
        await call(s, 'POST', '/files/', { key: s.adminKey, body: { action: 'put' } }),
        400,
        'bad-request/invalid-path',
      )
      expectError(await open('a/../b.txt'), 400, 'bad-request/invalid-path')
      await uploaded(s, 'plain.txt', 'plain')
      expectError(await open('plain.txt/inside.txt'), 422, 'processing-failure/destination-parent-conflict')
      await uploaded(s, 'folder1/x.txt', 'x')
      expectError(await open('folder1'), 422, 'processing-failure/destination-exists')
      expectError(
        await open('nowhere/x.txt', { mkdir_parents: false }),
        422,
        'processing-failure/destination-parent-does-not-exist',
      )
      expect((await open('folder1/y.txt', { mkdir_parents: false })).status).toBe(201)
      expect(
        await s.container.db.selectFrom('uploads').selectAll().where('path', '=', 'folder1').execute(),
      ).toEqual([])
    })

    it('refuses callers without write permission there', async () => {
      expectError(
        await open('shared/new.txt', {}, readonlyKey),
        403,
        'not-authorized/write-permission-required',
      )
      expectError(await open('elsewhere.txt', {}, writerKey), 403, 'not-authorized/write-permission-required')
      expectError(
        await open('outbox/x.txt', {}, restrictedKey),
        403,
        'not-authorized/api-key-is-path-restricted',
      )
      expect((await open('inbox/x.txt', {}, restrictedKey)).status).toBe(201)
      expect((await open('team/x.txt', {}, writerKey)).status).toBe(201)
    })

    it('keeps an upload to its owner and its path', async () => {
      const mine = await open('team/mine.txt', {}, writerKey)
      expectError(
        await open('team/mine.txt', { ref: mine.body.ref }, otherWriterKey),
        404,
        'not-found/file-upload-not-found',
      )
      expectError(
        await end('team/mine.txt', mine.body.ref, otherWriterKey),
        404,
        'not-found/file-upload-not-found',
      )
      expectError(
        await open('team/other.txt', { ref: mine.body.ref }, writerKey),
        404,
        'not-found/file-upload-not-found',
      )
      expectError(
        await open('team/mine.txt', { ref: 'f'.repeat(32) }, writerKey),
        404,
        'not-found/file-upload-not-found',
      )
      // A site-wide key's upload belongs to that key.
      const admins = await open('team/admin.txt')
      const otherSiteKey = (await makeKey(s, null)).key
      expectError(
        await end('team/admin.txt', admins.body.ref, otherSiteKey),
        404,
        'not-found/file-upload-not-found',
      )
      expect((await open('team/mine.txt', { ref: mine.body.ref }, writerKey)).status).toBe(200)
    })
  })

  describe('POST /files/{path} action=end', () => {
    it('stores a single part with the right checksums and records a create Action', async () => {
      const content = bytes(700)
      const { end: r } = await uploadFile(s, 'single/one.bin', [content])
      expect(r.status).toBe(201)
      // Known once the background job has read the blob; the answer to `end` does not wait.
      expect([r.body.md5, r.body.crc32]).toEqual([null, null])
      const { md5: summed, crc32: crc } = await withChecksums(target(s), 'single/one.bin')
      expect({ ...r.body, md5: summed, crc32: crc }).toMatchObject({
        id: expect.any(Number),
        path: 'single/one.bin',
        display_name: 'one.bin',
        type: 'file',
        size: 700,
        md5: md5(content),
        crc32: crc32(content),
        mime_type: 'application/octet-stream',
        permissions: 'rwdl',
        provided_mtime: null,
        custom_metadata: {},
        created_by_id: null,
        created_by_api_key_id: expect.any(Number),
      })
      expect(r.body.download_uri).toBeUndefined()
      expect(await download('single/one.bin')).toEqual(content)
      const [folder] = await actionsFor('single')
      expect(folder).toMatchObject({ action: 'create', display: 'Created folder single' })
      const [created] = await actionsFor('single/one.bin')
      expect(created).toMatchObject({
        action: 'create',
        display: 'Uploaded one.bin',
        interface: 'restapi',
        ip: '127.0.0.1',
        user_id: null,
      })
      expect(JSON.parse(created!.targets)).toEqual([{ type: 'file', id: r.body.id, name: 'one.bin' }])
      expect(
        await s.container.db.selectFrom('uploads').selectAll().where('path', '=', 'single/one.bin').execute(),
      ).toEqual([])
    })

    it('assembles parts sent out of order and all at once', async () => {
      const parts = [bytes(PART, 1), bytes(PART, 2), bytes(PART, 3), bytes(300, 4)]
      const { end: r } = await uploadFile(s, 'multi/four.bin', parts, { order: [3, 1, 0, 2] })
      expect(r.status).toBe(201)
      const whole = Buffer.concat(parts)
      expect(r.body.size).toBe(whole.length)
      const summed = await withChecksums(target(s), 'multi/four.bin')
      expect(summed.md5).toBe(md5(whole))
      expect(summed.crc32).toBe(crc32(whole))
      expect(await download('multi/four.bin')).toEqual(whole)
    })

    it('answers the File in XML with the file root', async () => {
      const first = await open('xml/done.txt')
      const r = await call(s, 'POST', filesUrl('xml/done.txt'), {
        key: s.adminKey,
        body: { action: 'end', ref: first.body.ref, path: 'xml/done.txt' },
        accept: 'application/xml',
      })
      expect(r.status).toBe(201)
      expect(r.text).toContain('<file>')
      expect(r.text).toContain('<size type="integer">0</size>')
      expect(r.text).not.toContain('<file-upload-part>')
    })

    it('stores an empty file when no part was sent', async () => {
      const { end: r } = await uploadFile(s, 'empty.txt', [])
      expect(r.status).toBe(201)
      expect(r.body).toMatchObject({ size: 0, md5: 'd41d8cd98f00b204e9800998ecf8427e', crc32: '00000000' })
      expect((await download('empty.txt')).length).toBe(0)
    })

    it('replaces an existing file: same id, new bytes, update Action, old blob queued for deletion', async () => {
      const first = await uploaded(s, 'replace/me.txt', 'first version')
      const oldKey = (await fileRow('replace/me.txt'))!.blob_key!
      const reopened = await open('replace/me.txt')
      expect(reopened.body.ask_about_overwrites).toBe(true)
      // Asking for another part looks at the path again, spelled in any case.
      const next = await open('REPLACE/me.TXT', { ref: reopened.body.ref, part: 2 })
      expect(next.status).toBe(200)
      expect(next.body.ask_about_overwrites).toBe(true)
      const second = await uploaded(s, 'Replace/ME.txt', 'second version')
      expect(second.id).toBe(first.id)
      expect(second.path).toBe('replace/me.txt')
      expect((await withChecksums(target(s), 'replace/me.txt')).md5).toBe(md5(Buffer.from('second version')))
      expect((await download('replace/me.txt')).toString()).toBe('second version')
      expect(await garbage()).toContain(oldKey)
      expect(await garbage()).not.toContain((await fileRow('replace/me.txt'))!.blob_key)
      const actions = (await actionsFor('replace/me.txt')).filter((a) => a.action !== 'read')
      expect(actions.map((a) => [a.action, a.display])).toEqual([
        ['create', 'Uploaded me.txt'],
        ['update', 'Replaced me.txt'],
      ])
    })

    it('keeps provided_mtime and renames instead of overwriting with with_rename', async () => {
      const r = await uploadFile(s, 'renamed/photo.jpg', [Buffer.from('one')], {
        open: { provided_mtime: '2024-05-06T07:08:09+02:00' },
      })
      expect(r.end.body.provided_mtime).toBe('2024-05-06T05:08:09Z')
      expect(r.end.body.mime_type).toBe('image/jpeg')
      const again = await uploadFile(s, 'renamed/photo.jpg', [Buffer.from('two')], {
        open: { with_rename: true },
      })
      expect(again.end.status).toBe(201)
      expect(again.end.body.path).toBe('renamed/photo (1).jpg')
      const third = await uploadFile(s, 'renamed/photo.jpg', [Buffer.from('three')], {
        open: { with_rename: true },
      })
      expect(third.end.body.path).toBe('renamed/photo (2).jpg')
      expect((await download('renamed/photo.jpg')).toString()).toBe('one')
    })

    it('refuses a gap in the parts, and keeps the upload for another try', async () => {
      const first = await open('gaps/a.bin')
      const ref = first.body.ref
      const p3 = await open('gaps/a.bin', { ref, part: 3 })
      expect((await putPart(p3.body.upload_uri, Buffer.from('three'))).status).toBe(200)
      expectError(await end('gaps/a.bin', ref), 400, 'bad-request/invalid-upload-part-gap')
      const p1 = await open('gaps/a.bin', { ref, part: 1 })
      expect((await putPart(p1.body.upload_uri, Buffer.from('one'))).status).toBe(200)
      expectError(await end('gaps/a.bin', ref), 400, 'bad-request/invalid-upload-part-gap')
      const p2 = await open('gaps/a.bin', { ref, part: 2 })
      expect((await putPart(p2.body.upload_uri, Buffer.from('two'))).status).toBe(200)
      const done = await end('gaps/a.bin', ref)
      expect(done.status).toBe(201)
      expect((await download('gaps/a.bin')).toString()).toBe('onetwothree')
      expectError(await end('gaps/a.bin', ref), 404, 'not-found/file-upload-not-found')
    })

    it('refuses to end onto a folder or under a file created meanwhile', async () => {
      const a = await open('race/target')
      await uploaded(s, 'race/target/inside.txt', 'x')
      expectError(await end('race/target', a.body.ref), 422, 'processing-failure/destination-exists')
      const b = await open('race2/sub/file.txt')
      await uploaded(s, 'race2/sub', 'now a file')
      expectError(
        await end('race2/sub/file.txt', b.body.ref),
        422,
        'processing-failure/destination-parent-conflict',
      )
    })

    it('checks write permission again at the end', async () => {
      const user = await makeUser(s)
      const grant = await call(s, 'POST', '/permissions', {
        key: s.adminKey,
        body: { path: 'revoked', user_id: user.id, permission: 'full' },
      })
      const key = (await makeKey(s, user.id)).key
      const up = await open('revoked/file.txt', {}, key)
      expect(up.status).toBe(201)
      await s.container.db.deleteFrom('permissions').where('id', '=', grant.body.id).execute()
      expectError(
        await end('revoked/file.txt', up.body.ref, key),
        403,
        'not-authorized/write-permission-required',
      )
    })
  })

  describe('PUT /upload_parts/{ref}/{part}', () => {
    const partUri = async (p: string, part = 1) => {
      const first = await open(p)
      const r = part === 1 ? first : await open(p, { ref: first.body.ref, part })
      return { ref: first.body.ref as string, uri: new URL(r.body.upload_uri as string) }
    }
    const expectLinkError = async (res: Response, status: number, type: string) => {
      const body = (await res.json()) as { type: string; 'http-code': number }
      expect({ status: res.status, type: body.type, code: body['http-code'] }).toEqual({
        status,
        type,
        code: status,
      })
    }

    it('stores a part of any content type without credentials and answers 200 with an ETag', async () => {
      const { ref, uri } = await partUri('parts/any.json', 2)
      const res = await fetch(uri, {
        method: 'PUT',
        body: '{"not": "parsed"}',
        headers: { 'Content-Type': 'application/json' },
      })
      expect(res.status).toBe(200)
      expect(res.headers.get('etag')).toBe(`"${ref}-2"`)
      expect(await res.text()).toBe('')
      const rows = await s.container.db
        .selectFrom('upload_parts')
        .innerJoin('uploads', 'uploads.id', 'upload_parts.upload_id')
        .select(['part_number', 'size'])
        .where('uploads.ref', '=', ref)
        .execute()
      expect(rows).toEqual([{ part_number: 2, size: 17 }])
      // Sending a part again replaces it.
      expect((await putPart(uri.href, Buffer.from('shorter'))).status).toBe(200)
      const again = await s.container.db
        .selectFrom('upload_parts')
        .innerJoin('uploads', 'uploads.id', 'upload_parts.upload_id')
        .select('size')
        .where('uploads.ref', '=', ref)
        .executeTakeFirstOrThrow()
      expect(again.size).toBe(7)
    })

    it('refuses a tampered, missing or expired signature before reading the body', async () => {
      const { uri } = await partUri('parts/signed.bin')
      const tampered = new URL(uri)
      const signature = uri.searchParams.get('signature')!
      tampered.searchParams.set(
        'signature',
        `${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`,
      )
      await expectLinkError(
        await putPart(tampered.href, Buffer.from('x')),
        401,
        'not-authenticated/invalid-or-expired-code',
      )
      const otherPart = new URL(uri.href.replace(/\/1\?/, '/2?'))
      await expectLinkError(
        await putPart(otherPart.href, Buffer.from('x')),
        401,
        'not-authenticated/invalid-or-expired-code',
      )
      const later = new URL(uri)
      later.searchParams.set('expires', String(Number(uri.searchParams.get('expires')) + 3600))
      await expectLinkError(
        await putPart(later.href, Buffer.from('x')),
        401,
        'not-authenticated/invalid-or-expired-code',
      )
      const unsigned = new URL(uri)
      unsigned.searchParams.delete('signature')
      await expectLinkError(
        await putPart(unsigned.href, Buffer.from('x')),
        401,
        'not-authenticated/invalid-or-expired-code',
      )
      // The link stops working after UPLOAD_URL_SECONDS (one hour here).
      skew += 3601_000
      await expectLinkError(
        await putPart(uri.href, Buffer.from('x')),
        401,
        'not-authenticated/invalid-or-expired-code',
      )
    })

    it('refuses bad part numbers, unknown uploads and finished ones', async () => {
      const { ref, uri } = await partUri('parts/numbers.bin')
      await expectLinkError(
        await putPart(uri.href.replace(/\/1\?/, '/0?'), Buffer.from('x')),
        400,
        'bad-request/request-params-invalid',
      )
      await expectLinkError(
        await putPart(uri.href.replace(/\/1\?/, '/10001?'), Buffer.from('x')),
        400,
        'bad-request/request-params-invalid',
      )
      await expectLinkError(
        await putPart(uri.href.replace(ref, 'f'.repeat(32)), Buffer.from('x')),
        404,
        'not-found/file-upload-not-found',
      )
      expect((await putPart(uri.href, Buffer.from('done'))).status).toBe(200)
      expect((await end('parts/numbers.bin', ref)).status).toBe(201)
      await expectLinkError(
        await putPart(uri.href, Buffer.from('late')),
        404,
        'not-found/file-upload-not-found',
      )
    })

    it('refuses a part declared larger than 5 GiB without reading it', async () => {
      const { uri } = await partUri('parts/huge.bin')
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(uri, {
          method: 'PUT',
          headers: { 'Content-Length': String(5 * 1024 ** 3 + 1) },
        })
        req.on('response', (res) => {
          let body = ''
          res.on('data', (d) => (body += d))
          res.on('end', () => {
            resolve({ status: res.statusCode ?? 0, body })
            req.destroy()
          })
        })
        req.on('error', reject)
        req.write('a few bytes')
      })
      expect(answer.status).toBe(400)
      expect(JSON.parse(answer.body).type).toBe('bad-request/invalid-upload-part-size')
    })

    it('keeps nothing of a part cut off midway, and the server goes on serving', async () => {
      const { ref, uri } = await partUri('parts/cut.bin')
      const storage = path.join(s.container.config.dataDir, 'storage')
      const req = http.request(uri, { method: 'PUT', headers: { 'Content-Length': '100000' } })
      req.on('error', () => undefined)
      req.write(Buffer.alloc(5000, 1))
      // Wait until the server is writing the part, then hang up.
      // Not failing if it never shows: the assertions below say what went wrong.
      await vi
        .waitFor(async () => expect(await fs.readdir(path.join(storage, 'tmp'))).not.toHaveLength(0), POLL)
        .catch(() => undefined)
      req.destroy()
      await expect.poll(async () => (await fs.readdir(path.join(storage, 'tmp'))).length, POLL).toBe(0)
      await expect(fs.access(path.join(storage, 'parts', ref, '1'))).rejects.toThrow()
      const parts = await s.container.db
        .selectFrom('upload_parts')
        .innerJoin('uploads', 'uploads.id', 'upload_parts.upload_id')
        .selectAll()
        .where('uploads.ref', '=', ref)
        .execute()
      expect(parts).toEqual([])
      // The same part can be sent again and the upload finished.
      expect((await putPart(uri.href, Buffer.from('whole part'))).status).toBe(200)
      expect((await end('parts/cut.bin', ref)).body.size).toBe(10)
      expect((await call(s, 'GET', '/api_key', { key: s.adminKey })).status).toBe(200)
    })

    it('refuses a part whose upload ended while its bytes were arriving, and keeps nothing of it', async () => {
      const { ref, uri } = await partUri('parts/late.bin')
      const { id } = await s.container.db
        .selectFrom('uploads')
        .select('id')
        .where('ref', '=', ref)
        .executeTakeFirstOrThrow()
      const storage = path.join(s.container.config.dataDir, 'storage')
      const req = http.request(uri, { method: 'PUT', headers: { 'Content-Length': '10000' } })
      const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
        req.on('response', (res) => {
          let body = ''
          res.on('data', (d) => (body += d))
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
        })
        req.on('error', reject)
      })
      req.write(Buffer.alloc(5000, 1))
      // The link was checked and the bytes are on their way to disk: the upload ends meanwhile.
      await vi.waitFor(
        async () => expect(await fs.readdir(path.join(storage, 'tmp'))).not.toHaveLength(0),
        POLL,
      )
      expect((await end('parts/late.bin', ref)).status).toBe(201)
      req.end(Buffer.alloc(5000, 2))
      const r = await answer
      expect(r.status).toBe(404)
      expect(JSON.parse(r.body).type).toBe('not-found/file-upload-not-found')
      const parts = await s.container.db
        .selectFrom('upload_parts')
        .select('part_number')
        .where('upload_id', '=', id)
        .execute()
      expect(parts).toEqual([])
      await expect(fs.access(path.join(storage, 'parts', ref))).rejects.toThrow()
      expect((await fileRow('parts/late.bin'))?.size).toBe(0)
    })

    it('pushes the expiry back when a part is stored, but not again for a request right after', async () => {
      const { ref, uri } = await partUri('parts/expiry.bin')
      const expiry = async () =>
        (
          await s.container.db
            .selectFrom('uploads')
            .select('expires_at')
            .where('ref', '=', ref)
            .executeTakeFirstOrThrow()
        ).expires_at
      const opened = await expiry()
      skew += 60_000
      expect((await putPart(uri.href, Buffer.from('one'))).status).toBe(200)
      const stored = await expiry()
      expect(stored).toBeGreaterThanOrEqual(opened + 60_000)
      // Asking for the next part's link a moment later leaves the row as the part left it.
      expect((await open('parts/expiry.bin', { ref, part: 2 })).status).toBe(200)
      expect(await expiry()).toBe(stored)
      // Later than the few seconds' slack, the request pushes it back again.
      skew += 11_000
      expect((await open('parts/expiry.bin', { ref, part: 2 })).status).toBe(200)
      expect(await expiry()).toBeGreaterThanOrEqual(stored + 11_000)
    })
  })

  describe('POST /file_actions/begin_upload/{path}', () => {
    it('opens an upload and describes `parts` parts from `part` on', async () => {
      const r = await call(s, 'POST', `/file_actions/begin_upload/${encodeURIComponent('begin/three.bin')}`, {
        key: s.adminKey,
        body: { parts: 3, size: 2500 },
      })
      expect(r.status).toBe(201)
      expect(r.body.map((p: { part_number: number }) => p.part_number)).toEqual([1, 2, 3])
      const ref = r.body[0].ref
      expect(r.body.every((p: { ref: string }) => p.ref === ref)).toBe(true)
      const content = [bytes(PART, 5), bytes(PART, 6), bytes(452, 7)]
      for (const [i, p] of r.body.entries())
        expect((await putPart(p.upload_uri, content[i]!)).status).toBe(200)
      expect((await end('begin/three.bin', ref)).status).toBe(201)
      expect((await withChecksums(target(s), 'begin/three.bin')).md5).toBe(md5(Buffer.concat(content)))
      const more = await call(s, 'POST', '/file_actions/begin_upload/begin/four.bin', {
        key: s.adminKey,
        body: { part: 9999, parts: 2 },
      })
      expect(more.body.map((p: { part_number: number }) => p.part_number)).toEqual([9999, 10000])
    })

    it('continues an upload given its ref, and answers XML lists', async () => {
      const first = await open('begin/cont.bin')
      const r = await call(s, 'POST', '/file_actions/begin_upload/begin/cont.bin', {
        key: s.adminKey,
        body: { ref: first.body.ref, part: 2, parts: 2 },
        accept: 'application/xml',
      })
      expect(r.status).toBe(201)
      expect(r.text).toContain('<file-upload-parts type="array">')
      expect(r.text.match(/<file-upload-part>/g)).toHaveLength(2)
      expect(r.text).toContain(`<ref>${first.body.ref}</ref>`)
    })

    it('refuses what action=put refuses', async () => {
      const begin = (p: string, body: Record<string, unknown>, key = s.adminKey) =>
        call(s, 'POST', `/file_actions/begin_upload/${p}`, { key, body })
      expectError(
        await begin('begin/x.bin', { part: 9999, parts: 3 }),
        400,
        'bad-request/part-number-too-large',
      )
      expectError(await begin('begin/x.bin', { parts: 0 }), 400, 'bad-request/request-params-invalid')
      expectError(await begin('begin/x.bin', { action: 'put' }), 400, 'bad-request/request-params-invalid')
      expectError(
        await begin('shared/x.bin', {}, readonlyKey),
        403,
        'not-authorized/write-permission-required',
      )
      expectError(await begin('begin/x.bin', { ref: 'f'.repeat(32) }), 404, 'not-found/file-upload-not-found')
    })
  })

  describe('concurrency', () => {
    it('ends two uploads of one path at once in one file holding one of them, the other blob queued', async () => {
      const a = bytes(2 * PART + 10, 8)
      const b = bytes(PART + 99, 9)
      const stage = async (content: Buffer) => {
        const first = await open('race/same.bin')
        const chunks = [
          content.subarray(0, PART),
          content.subarray(PART, 2 * PART),
          content.subarray(2 * PART),
        ]
        for (const [i, c] of chunks.entries()) {
          if (c.length === 0) continue
          const p = await open('race/same.bin', { ref: first.body.ref, part: i + 1 })
          expect((await putPart(p.body.upload_uri, c)).status).toBe(200)
        }
        return first.body.ref as string
      }
      const refs = [await stage(a), await stage(b)]
      const before = new Set(await garbage())
      const ends = await Promise.all(refs.map((ref) => end('race/same.bin', ref)))
      expect(ends.map((e) => e.status)).toEqual([201, 201])
      const rows = await s.container.db
        .selectFrom('files')
        .selectAll()
        .where('path_lower', '=', 'race/same.bin')
        .execute()
      expect(rows).toHaveLength(1)
      const content = await download('race/same.bin')
      expect(content.equals(a) || content.equals(b)).toBe(true)
      expect((await withChecksums(target(s), 'race/same.bin')).md5).toBe(md5(content))
      const queued = (await garbage()).filter((k) => !before.has(k))
      expect(queued).toHaveLength(1)
      expect(queued[0]).not.toBe(rows[0]!.blob_key)
      const actions = (await actionsFor('race/same.bin')).map((x) => x.action).filter((x) => x !== 'read')
      expect(actions.sort()).toEqual(['create', 'update'])
    })
  })

  describe('concurrency with with_rename', () => {
    it('gives each of several uploads ending at once a name of its own', async () => {
      const staged = await Promise.all(
        [1, 2, 3, 4].map(async (i) => {
          const first = await open('renames/same.txt', { with_rename: true })
          expect((await putPart(first.body.upload_uri, Buffer.from(`copy ${i}`))).status).toBe(200)
          return first.body.ref as string
        }),
      )
      const ends = await Promise.all(staged.map((ref) => end('renames/same.txt', ref)))
      expect(ends.map((e) => e.status)).toEqual([201, 201, 201, 201])
      expect(ends.map((e) => e.body.path).sort()).toEqual([
        'renames/same (1).txt',
        'renames/same (2).txt',
        'renames/same (3).txt',
        'renames/same.txt',
      ])
      const texts = await Promise.all(ends.map(async (e) => (await download(e.body.path)).toString()))
      expect(texts.sort()).toEqual(['copy 1', 'copy 2', 'copy 3', 'copy 4'])
    })
  })

  describe('files.com SDK', () => {
    it('uploads with File.uploadData in parallel parts and reads back with File.find + download', async () => {
      // The SDK's download helpers use https.get: the links must lead to an HTTPS front.
      const tls = await startTlsFront(s.url)
      const baseUrl = s.container.config.baseUrl
      s.container.config.baseUrl = tls.url
      https.globalAgent.options.ca = tls.cert
      try {
        resetSdk(tls.url)
        Files.setApiKey(s.adminKey)
        const text = 'wharf '.repeat(700)
        const file = await SdkFile.uploadData('sdk/dir/hello.txt', text)
        expect(file.path).toBe('sdk/dir/hello.txt')
        expect(file.size).toBe(text.length)
        expect(file.md5).toBeNull()
        const summed = await vi.waitFor(async () => {
          const again = await SdkFile.find('sdk/dir/hello.txt')
          if (again.md5 === null) throw new Error('no checksums yet')
          return again
        }, POLL)
        expect(summed.md5).toBe(md5(Buffer.from(text)))
        const found = await SdkFile.find('sdk/dir/hello.txt')
        expect(found.download_uri).toBeUndefined()
        const withLink = await found.download()
        expect(withLink.download_uri).toMatch(/\/api\/rest\/v1\/downloads\/[^/]+\/hello\.txt$/)
        expect(await withLink.downloadToString()).toBe(text)
        const empty = await SdkFile.uploadStream('sdk/empty.txt', Readable.from([]))
        expect(empty.size).toBe(0)
      } finally {
        s.container.config.baseUrl = baseUrl
        await tls.close()
      }
    })
  })
})
