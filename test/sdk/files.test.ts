import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import path from 'node:path'
import { Readable } from 'node:stream'
import Files from 'files.com/lib/Files.js'
import File from 'files.com/lib/models/File.js'
import { describe, expect, it } from 'vitest'
import { call, dialects, makeKey, makeUser, type TestServer } from '../helpers/server.js'
import { crc32, filesSdkServer, findSummed, md5, PART_SIZE, unique } from './files-sdk.js'
import { describeError, type Recorder, sdkError } from './sdk.js'

describe.each(dialects)('files.com SDK: uploads, downloads and metadata (%s)', (dialect) => {
  let s: TestServer
  let rec: Recorder
  let tmp: string
  filesSdkServer(dialect, (ctx) => {
    ;({ s, rec, tmp } = ctx)
  })

  /** The upload steps on the wire: method, the `action`/`part` the SDK sent, and its credentials. */
  const uploadSteps = () =>
    rec.requests.map((r) => {
      const q = new URL(r.url, 'http://x').searchParams
      const body = r.body && r.headers['content-type']?.includes('json') ? JSON.parse(r.body) : {}
      return {
        method: r.method,
        action: body.action ?? q.get('action'),
        part: body.part ?? (q.get('part') === null ? undefined : Number(q.get('part'))),
        key: r.headers['x-filesapi-key'] !== undefined,
      }
    })

  async function localFile(name: string, bytes: Buffer): Promise<string> {
    const file = path.join(tmp, name)
    await fs.writeFile(file, bytes)
    return file
  }

  it('uploads a small text file with File.uploadData and reads it back with downloadToString', async () => {
    const p = `${unique('text')}/hello.txt`
    const text = 'Hello, Wharf!\nÜnïcödé line ✓\n'
    const up = await File.uploadData(p, text)
    expect(up).toBeInstanceOf(File)
    expect(up.id).toEqual(expect.any(Number))
    expect(up.path).toBe(p)
    expect(up.display_name).toBe('hello.txt')
    expect(up.type).toBe('file')
    expect(up.size).toBe(Buffer.byteLength(text))
    // Computed after the upload, by a background job: null in the answer to `end`.
    expect([up.md5, up.crc32]).toEqual([null, null])
    expect(up.mime_type).toBe('text/plain')
    expect(up.download_uri).toBeUndefined()
    // put, the URL of part 1, the part itself (signed URL, no key), end.
    expect(uploadSteps()).toEqual([
      { method: 'POST', action: 'put', part: undefined, key: true },
      { method: 'POST', action: 'put', part: 1, key: true },
      { method: 'PUT', action: null, part: undefined, key: false },
      { method: 'POST', action: 'end', part: undefined, key: true },
    ])
    const summed = await findSummed(p)
    expect(summed.md5).toBe(md5(text))
    expect(summed.crc32).toBe(crc32(text))

    const found = await File.find(p)
    expect(found.id).toBe(up.id)
    expect(found.download_uri).toBeUndefined()
    const withLink = await found.download()
    expect(withLink.download_uri).toMatch(/^https:\/\/127\.0\.0\.1:\d+\//)
    expect(await withLink.downloadToString()).toBe(text)
  })

  it('uploads an empty local file with File.uploadFile: size 0, the md5 of nothing, empty download', async () => {
    const p = `${unique('empty')}/nothing.bin`
    const up = await File.uploadFile(p, await localFile('empty.bin', Buffer.alloc(0)))
    expect(up.path).toBe(p)
    expect(up.size).toBe(0)
    expect(up.md5).toBe('d41d8cd98f00b204e9800998ecf8427e')
    expect(up.crc32).toBe('00000000')
    // No part at all: put, then end.
    expect(uploadSteps().map((x) => x.action)).toEqual(['put', 'end'])
    const dl = await File.find(p).then((f) => f.download())
    expect(await dl.downloadToString()).toBe('')
  })

  it('uploads a file larger than one part in several parts and downloads the same bytes', async () => {
    const p = `${unique('big')}/random.bin`
    const bytes = crypto.randomBytes(300 * 1024)
    const up = await File.uploadFile(p, await localFile('random.bin', bytes))
    expect(up.size).toBe(bytes.length)
    const steps = uploadSteps()
    const parts = Math.ceil(bytes.length / PART_SIZE)
    expect(parts).toBe(4)
    expect(steps.filter((x) => x.method === 'PUT')).toHaveLength(parts)
    expect(steps.filter((x) => x.part !== undefined).map((x) => x.part)).toEqual([1, 2, 3, 4])
    const summed = await findSummed(p)
    expect(summed.md5).toBe(md5(bytes))
    expect(summed.crc32).toBe(crc32(bytes))

    const dl = await File.find(p).then((f) => f.download())
    const out = path.join(tmp, 'random.out')
    await dl.downloadToFile(out)
    const got = await fs.readFile(out)
    expect(got.length).toBe(bytes.length)
    expect(got.equals(bytes)).toBe(true)
  })

  it('splits one large in-memory buffer into parts (File.uploadData) and replaces the file on re-upload', async () => {
    const p = `${unique('replace')}/data.bin`
    const first = crypto.randomBytes(3 * PART_SIZE + 17)
    const second = crypto.randomBytes(PART_SIZE + 1)
    await File.uploadData(p, first)
    expect((await findSummed(p)).md5).toBe(md5(first))
    const b = await File.uploadData(p, second)
    expect(b.path).toBe(p)
    expect(b.size).toBe(second.length)

    const found = await findSummed(p)
    expect(found.size).toBe(second.length)
    expect(found.md5).toBe(md5(second))
    const out = path.join(tmp, 'replaced.out')
    await (await found.download()).downloadToFile(out)
    expect((await fs.readFile(out)).equals(second)).toBe(true)
  })

  it('streams an upload from a Readable with File.uploadStream', async () => {
    const p = `${unique('stream')}/streamed.bin`
    const bytes = crypto.randomBytes(2 * PART_SIZE + 5)
    const up = await File.uploadStream(p, Readable.from([bytes.subarray(0, 1000), bytes.subarray(1000)]))
    expect(up.size).toBe(bytes.length)
    expect((await findSummed(p)).md5).toBe(md5(bytes))
  })

  it('reads metadata with File.find (no download link) and with download({ action: "stat" })', async () => {
    const folder = unique('meta')
    const p = `${folder}/Report.CSV`
    const up = await File.uploadData(p, 'a,b\n1,2\n')
    const found = await findSummed(p)
    expect(found.attributes).toMatchObject({
      id: up.id,
      path: p,
      display_name: 'Report.CSV',
      type: 'file',
      size: 8,
      md5: md5('a,b\n1,2\n'),
      crc32: crc32('a,b\n1,2\n'),
      mime_type: 'text/csv',
      permissions: expect.stringContaining('r'),
    })
    expect(found.mtime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
    expect(found.attributes['download_uri']).toBeUndefined()
    expect(rec.requests.at(-1)!.url.split('?')[0]).toBe(
      `/api/rest/v1/file_actions/metadata/${encodeURIComponent(p)}`,
    )

    const stat = await found.download({ action: 'stat' })
    expect(stat.path).toBe(p)
    expect(stat.attributes['download_uri']).toBeUndefined()

    const dir = await File.find(folder)
    expect(dir.attributes).toMatchObject({ path: folder, type: 'directory', size: 0, md5: null, crc32: null })
  })

  it('throws typed errors for a missing file, a missing folder, and a folder asked for as a file', async () => {
    const missing = `${unique('missing')}/nope.txt`
    expect(describeError(await sdkError(File.find(missing)))).toEqual({
      className: 'NotFound_FileNotFoundError',
      type: 'not-found/file-not-found',
      httpCode: 404,
    })
    expect(describeError(await sdkError(new File({ path: missing }).download()))).toEqual({
      className: 'NotFound_FileNotFoundError',
      type: 'not-found/file-not-found',
      httpCode: 404,
    })
    const folder = unique('dir')
    await File.uploadData(`${folder}/inside.txt`, 'x')
    expect(describeError(await sdkError(new File({ path: folder }).download()))).toEqual({
      className: 'BadRequest_CannotDownloadDirectoryError',
      type: 'bad-request/cannot-download-directory',
      httpCode: 400,
    })
  })

  it('refuses uploads without write permission and reads outside a restricted key’s folder', async () => {
    const folder = unique('perm')
    await File.uploadData(`${folder}/shared.txt`, 'shared')
    await File.uploadData(`${unique('elsewhere')}/x.txt`, 'x')
    const user = await makeUser(s)
    const grant = await call(s, 'POST', '/permissions', {
      key: s.adminKey,
      body: { path: folder, user_id: user.id, permission: 'readonly' },
    })
    expect(grant.status).toBe(201)
    const userKey = await makeKey(s, user.id)
    Files.setApiKey(userKey.key)
    const dl = await File.find(`${folder}/shared.txt`).then((f) => f.download())
    expect(await dl.downloadToString()).toBe('shared')
    expect(describeError(await sdkError(File.uploadData(`${folder}/new.txt`, 'no')))).toEqual({
      className: 'NotAuthorized_WritePermissionRequiredError',
      type: 'not-authorized/write-permission-required',
      httpCode: 403,
    })

    // A site admin's key: only the key's folder restriction stands in the way.
    const admin = await makeUser(s, { site_admin: true })
    const restricted = await makeKey(s, admin.id, { path: unique('jail') })
    Files.setApiKey(restricted.key)
    expect(describeError(await sdkError(File.find(`${folder}/shared.txt`)))).toEqual({
      className: 'NotAuthorized_ApiKeyIsPathRestrictedError',
      type: 'not-authorized/api-key-is-path-restricted',
      httpCode: 403,
    })
  })
})
