import { beforeAll, describe, expect, it } from 'vitest'
import { ApiError } from '../src/api/errors.js'
import { contentDisposition, parseRange } from '../src/http/file-bytes.js'
import { bytes, filesUrl, md5, target, uploaded, withChecksums } from './helpers/files.js'
import {
  type CallResult,
  call,
  dialects,
  expectError,
  grant,
  makeKey,
  makeUser,
  type TestUser,
  useServer,
} from './helpers/server.js'

const PART = 1024

/** A response of an unauthenticated link, read whole. */
async function fetchLink(url: string, init: RequestInit = {}): Promise<CallResult & { bytes: Buffer }> {
  const res = await fetch(url, { redirect: 'manual', ...init })
  const buf = Buffer.from(await res.arrayBuffer())
  const text = buf.toString('utf8')
  const isJson = (res.headers.get('content-type') ?? '').includes('json')
  return {
    status: res.status,
    headers: res.headers,
    text,
    body: isJson && text ? JSON.parse(text) : undefined,
    bytes: buf,
  }
}

describe('byte ranges (unit)', () => {
  it('reads single ranges, ignores malformed and multiple ones, and refuses unsatisfiable ones', () => {
    expect(parseRange(undefined, 100)).toBeNull()
    expect(parseRange('bytes=0-9', 100)).toEqual({ start: 0, end: 9 })
    expect(parseRange('bytes=90-', 100)).toEqual({ start: 90, end: 99 })
    expect(parseRange('bytes=90-500', 100)).toEqual({ start: 90, end: 99 })
    expect(parseRange('bytes=-10', 100)).toEqual({ start: 90, end: 99 })
    expect(parseRange('bytes=-500', 100)).toEqual({ start: 0, end: 99 })
    expect(parseRange('bytes=0-1,5-6', 100)).toBeNull()
    expect(parseRange('bytes=9-2', 100)).toBeNull()
    expect(parseRange('items=0-1', 100)).toBeNull()
    expect(parseRange('bytes=-', 100)).toBeNull()
    for (const [header, size] of [
      ['bytes=100-', 100],
      ['bytes=-0', 100],
      ['bytes=0-', 0],
    ] as const) {
      const err = (() => {
        try {
          parseRange(header, size)
        } catch (e) {
          return e
        }
      })()
      expect(err).toBeInstanceOf(ApiError)
      expect(err).toMatchObject({ type: 'processing-failure/invalid-range', status: 416 })
      expect((err as ApiError).extras.headers).toEqual({ 'Content-Range': `bytes */${size}` })
    }
  })

  it('names the file for any browser: an ASCII fallback and the exact UTF-8 name', () => {
    expect(contentDisposition('report.pdf')).toBe(
      `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`,
    )
    expect(contentDisposition('café "q" (1).txt')).toBe(
      `attachment; filename="caf_ _q_ (1).txt"; filename*=UTF-8''caf%C3%A9%20%22q%22%20%281%29.txt`,
    )
  })
})

describe.each(dialects)('downloads (%s)', (dialect) => {
  /** Added to the server's clock to make links expire; it only grows (the rate limiter needs that). */
  let skew = 0
  let reader: TestUser
  let readerKey: string
  let writeonlyKey: string
  let listerKey: string
  let strangerKey: string
  let restrictedKey: string
  const content = bytes(3000, 3)

  const get = (p: string, query = '', key = s.adminKey, accept?: string) =>
    call(s, 'GET', `${filesUrl(p)}${query}`, { key, ...(accept ? { accept } : {}) })
  const linkTo = async (p: string, key = s.adminKey) => {
    const r = await get(p, '', key)
    expect(r.status, r.text).toBe(200)
    return r.body.download_uri as string
  }
  const reads = async (p: string) =>
    s.container.db
      .selectFrom('actions')
      .selectAll()
      .where('path', '=', p)
      .where('action', '=', 'read')
      .execute()

  const s = useServer(dialect, { UPLOAD_PART_SIZE: String(PART) }, { now: () => Date.now() + skew })
  beforeAll(async () => {
    reader = await makeUser(s, { username: 'reader' })
    await grant(s, reader.id, 'pub', 'readonly')
    readerKey = (await makeKey(s, reader.id)).key
    const writer = await makeUser(s)
    await grant(s, writer.id, 'pub', 'writeonly')
    writeonlyKey = (await makeKey(s, writer.id)).key
    const lister = await makeUser(s)
    await grant(s, lister.id, 'pub', 'list')
    listerKey = (await makeKey(s, lister.id)).key
    strangerKey = (await makeKey(s, (await makeUser(s)).id)).key
    const admin = await makeUser(s, { site_admin: true })
    restrictedKey = (await makeKey(s, admin.id, { path: 'inbox' })).key
    await uploaded(s, 'pub/data.bin', content)
    await uploaded(s, 'pub/notes.json', '{"a":1}')
    await uploaded(s, 'pub/café.txt', 'bonjour')
    await uploaded(s, 'pub/empty.txt', '')
    // The ETags below are md5s, known once the background job has read each upload.
    for (const p of ['pub/data.bin', 'pub/notes.json', 'pub/café.txt']) await withChecksums(target(s), p)
  })

  describe('GET /files/{path}', () => {
    it('returns the File with a signed download_uri, and records no read', async () => {
      const r = await get('pub/data.bin')
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ path: 'pub/data.bin', type: 'file', size: 3000, md5: md5(content) })
      const uri = new URL(r.body.download_uri)
      expect(`${uri.origin}`).toBe(s.url)
      expect(uri.pathname).toMatch(
        /^\/api\/rest\/v1\/downloads\/[A-Za-z0-9_-]+~[A-Za-z0-9_-]{43}\/data\.bin$/,
      )
      expect(await reads('pub/data.bin')).toEqual([])
      const stat = await get('pub/data.bin', '?action=stat&with_previews=true&preview_size=large')
      expect(stat.status).toBe(200)
      expect(stat.body.download_uri).toBeUndefined()
      expect(await reads('pub/data.bin')).toEqual([])
    })

    it('redirects to the link with action=redirect', async () => {
      const r = await fetchLink(`${s.api}${filesUrl('pub/data.bin')}?action=redirect`, {
        headers: { 'X-ServiceAPI-Key': s.adminKey },
      })
      expect(r.status).toBe(302)
      const location = r.headers.get('location')!
      expect(location.startsWith(`${s.api}/downloads/`)).toBe(true)
      const bytesBack = await fetchLink(location)
      expect(bytesBack.bytes.equals(content)).toBe(true)
    })

    it('answers XML with the file root', async () => {
      const r = await get('pub/notes.json', '', s.adminKey, 'application/xml')
      expect(r.status).toBe(200)
      expect(r.text).toContain('<file>')
      expect(r.text).toContain('<path>pub/notes.json</path>')
      expect(r.text).toContain('<download_uri>')
    })

    it('refuses folders, missing files and bad parameters', async () => {
      expectError(await get('pub'), 400, 'bad-request/cannot-download-directory')
      expectError(
        await call(s, 'GET', '/files/', { key: s.adminKey }),
        400,
        'bad-request/cannot-download-directory',
      )
      expectError(await get('pub/nothing.txt'), 404, 'not-found/file-not-found')
      expectError(await get('pub/data.bin', '?action=delete'), 400, 'bad-request/request-params-invalid')
      expectError(await get('pub/data.bin', '?colour=red'), 400, 'bad-request/request-params-invalid')
      expectError(await get('pub/../data.bin'), 400, 'bad-request/invalid-path')
    })

    it('refuses callers who may not read there', async () => {
      expect((await get('pub/data.bin', '', readerKey)).status).toBe(200)
      expectError(await get('pub/data.bin', '', writeonlyKey), 403, 'not-authorized/read-permission-required')
      expectError(await get('pub/data.bin', '', strangerKey), 403, 'not-authorized/read-permission-required')
      expectError(
        await get('pub/data.bin', '', restrictedKey),
        403,
        'not-authorized/api-key-is-path-restricted',
      )
      expectError(
        await call(s, 'GET', filesUrl('pub/data.bin')),
        401,
        'not-authenticated/authentication-required',
      )
    })
  })

  describe('GET /downloads/{token}/{name}', () => {
    it('streams the bytes with their headers and records one read for the link’s user', async () => {
      const uri = await linkTo('pub/data.bin', readerKey)
      const r = await fetchLink(uri)
      expect(r.status).toBe(200)
      expect(r.bytes.equals(content)).toBe(true)
      const row = await s.container.db
        .selectFrom('files')
        .selectAll()
        .where('path', '=', 'pub/data.bin')
        .executeTakeFirstOrThrow()
      expect(Object.fromEntries(r.headers)).toMatchObject({
        'content-type': 'application/octet-stream',
        'content-length': '3000',
        'accept-ranges': 'bytes',
        etag: `"${md5(content)}"`,
        'last-modified': new Date(row.mtime).toUTCString(),
        'content-disposition': `attachment; filename="data.bin"; filename*=UTF-8''data.bin`,
      })
      const [read, ...more] = (await reads('pub/data.bin')).filter((a) => a.user_id === reader.id)
      expect(more).toEqual([])
      expect(read).toMatchObject({
        user_id: reader.id,
        username: 'reader',
        ip: '127.0.0.1',
        interface: 'restapi',
        display: 'Downloaded data.bin',
        folder: 'pub',
      })
      expect(JSON.parse(read!.targets)).toEqual([{ type: 'file', id: row.id, name: 'data.bin' }])
    })

    it('serves names that look like format suffixes, and exact non-ASCII names', async () => {
      const json = await fetchLink(await linkTo('pub/notes.json'))
      expect(json.status).toBe(200)
      expect(json.headers.get('content-type')).toMatch(/^application\/json/)
      expect(json.text).toBe('{"a":1}')
      const uri = await linkTo('pub/café.txt')
      expect(uri.endsWith('/caf%C3%A9.txt')).toBe(true)
      const cafe = await fetchLink(uri)
      expect(cafe.text).toBe('bonjour')
      expect(cafe.headers.get('content-disposition')).toBe(
        `attachment; filename="caf_.txt"; filename*=UTF-8''caf%C3%A9.txt`,
      )
      const empty = await fetchLink(await linkTo('pub/empty.txt'))
      expect({ status: empty.status, length: empty.headers.get('content-length'), body: empty.text }).toEqual(
        {
          status: 200,
          length: '0',
          body: '',
        },
      )
    })

    it('serves single byte ranges with 206, whole files for multiple ranges, 416 outside the file', async () => {
      const uri = await linkTo('pub/data.bin')
      const head = await fetchLink(uri, { headers: { Range: 'bytes=0-9' } })
      expect(head.status).toBe(206)
      expect(head.headers.get('content-range')).toBe('bytes 0-9/3000')
      expect(head.headers.get('content-length')).toBe('10')
      expect(head.bytes.equals(content.subarray(0, 10))).toBe(true)
      const tail = await fetchLink(uri, { headers: { Range: 'bytes=2990-' } })
      expect(tail.status).toBe(206)
      expect(tail.bytes.equals(content.subarray(2990))).toBe(true)
      const suffix = await fetchLink(uri, { headers: { Range: 'bytes=-100' } })
      expect(suffix.status).toBe(206)
      expect(suffix.headers.get('content-range')).toBe('bytes 2900-2999/3000')
      expect(suffix.bytes.equals(content.subarray(2900))).toBe(true)
      const middle = await fetchLink(uri, { headers: { Range: 'bytes=1000-1999' } })
      expect(middle.bytes.equals(content.subarray(1000, 2000))).toBe(true)
      const multi = await fetchLink(uri, { headers: { Range: 'bytes=0-1,5-6' } })
      expect(multi.status).toBe(200)
      expect(multi.bytes.equals(content)).toBe(true)
      const outside = await fetchLink(uri, { headers: { Range: 'bytes=3000-3100' } })
      expectError(outside, 416, 'processing-failure/invalid-range')
      expect(outside.headers.get('content-range')).toBe('bytes */3000')
    })

    it('honours If-Range: the range for the current ETag, the whole file for a stale one', async () => {
      const uri = await linkTo('pub/data.bin')
      const current = await fetchLink(uri, {
        headers: { Range: 'bytes=0-4', 'If-Range': `"${md5(content)}"` },
      })
      expect(current.status).toBe(206)
      const stale = await fetchLink(uri, { headers: { Range: 'bytes=0-4', 'If-Range': '"0123"' } })
      expect(stale.status).toBe(200)
      expect(stale.bytes.length).toBe(3000)
    })

    it('records a read once per download: for a whole file or a range from byte 0, never for HEAD', async () => {
      await uploaded(s, 'pub/counted.bin', bytes(2000, 9))
      await withChecksums(target(s), 'pub/counted.bin')
      const uri = await linkTo('pub/counted.bin')
      const count = async () => (await reads('pub/counted.bin')).length
      const headed = await fetch(uri, { method: 'HEAD' })
      expect(headed.status).toBe(200)
      expect(headed.headers.get('content-length')).toBe('2000')
      expect(headed.headers.get('etag')).toBe(`"${md5(bytes(2000, 9))}"`)
      expect((await headed.arrayBuffer()).byteLength).toBe(0)
      expect(await count()).toBe(0)
      await fetchLink(uri, { headers: { Range: 'bytes=0-999' } })
      expect(await count()).toBe(1)
      await fetchLink(uri, { headers: { Range: 'bytes=1000-' } })
      expect(await count()).toBe(1)
      await fetchLink(uri)
      expect(await count()).toBe(2)
      await call(s, 'GET', '/file_actions/metadata/pub/counted.bin', { key: s.adminKey })
      await get('pub/counted.bin', '?action=stat')
      expect(await count()).toBe(2)
    })

    it('refuses tampered, malformed and expired links', async () => {
      const uri = await linkTo('pub/data.bin')
      const [base, token, name] = /^(.*\/downloads\/)([^/]+)\/([^/]+)$/.exec(uri)!.slice(1) as [
        string,
        string,
        string,
      ]
      const [payload, sig] = token.split('~') as [string, string]
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString())
      const forged = Buffer.from(JSON.stringify({ ...claims, e: claims.e + 86400 })).toString('base64url')
      for (const bad of [
        `${payload}~${sig.slice(0, -2)}AA`,
        `${forged}~${sig}`,
        `${payload}`,
        'not-a-token',
        `${Buffer.from('{"s":1}').toString('base64url')}~${sig}`,
      ]) {
        expectError(
          await fetchLink(`${base}${bad}/${name}`),
          401,
          'not-authenticated/invalid-or-expired-code',
        )
      }
      // The link stops working after DOWNLOAD_URL_SECONDS (one hour here).
      skew += 3601_000
      expectError(await fetchLink(uri), 401, 'not-authenticated/invalid-or-expired-code')
      expect((await fetchLink(await linkTo('pub/data.bin'))).status).toBe(200)
    })

    it('stops serving a link once its file is replaced or deleted', async () => {
      await uploaded(s, 'pub/changing.txt', 'version one')
      const old = await linkTo('pub/changing.txt')
      await uploaded(s, 'pub/changing.txt', 'version two')
      expectError(await fetchLink(old), 404, 'not-found/file-not-found')
      const current = await linkTo('pub/changing.txt')
      expect((await fetchLink(current)).text).toBe('version two')
      await s.container.db.deleteFrom('files').where('path', '=', 'pub/changing.txt').execute()
      expectError(await fetchLink(current), 404, 'not-found/file-not-found')
    })
  })

  describe('GET /file_actions/metadata/{path}', () => {
    it('describes files and folders without a download_uri', async () => {
      const file = await call(s, 'GET', '/file_actions/metadata/pub%2Fdata.bin', { key: readerKey })
      expect(file.status).toBe(200)
      expect(file.body).toMatchObject({ path: 'pub/data.bin', type: 'file', size: 3000, permissions: 'rl' })
      expect(file.body.download_uri).toBeUndefined()
      const folder = await call(s, 'GET', '/file_actions/metadata/pub?with_priority_color=true', {
        key: listerKey,
      })
      expect(folder.status).toBe(200)
      expect(folder.body).toMatchObject({
        path: 'pub',
        type: 'directory',
        size: 0,
        md5: null,
        permissions: 'l',
      })
      const xml = await call(s, 'GET', '/file_actions/metadata/pub/data.bin', {
        key: s.adminKey,
        accept: 'application/xml',
      })
      expect(xml.text).toContain('<file>')
    })

    it('refuses what the caller may neither read nor list, and missing paths', async () => {
      const meta = (p: string, key: string) => call(s, 'GET', `/file_actions/metadata/${p}`, { key })
      expect((await meta('pub/data.bin', listerKey)).status).toBe(200)
      expectError(await meta('pub/data.bin', writeonlyKey), 403, 'not-authorized/read-permission-required')
      expectError(await meta('pub/data.bin', restrictedKey), 403, 'not-authorized/api-key-is-path-restricted')
      expectError(await meta('pub/none.bin', s.adminKey), 404, 'not-found/file-not-found')
      expectError(
        await meta('pub/data.bin?action=stat', s.adminKey),
        400,
        'bad-request/request-params-invalid',
      )
    })
  })

  describe('POST /resources/download', () => {
    const post = (body: unknown, key = s.adminKey, headers: Record<string, string> = {}) =>
      fetch(`${s.api}/resources/download`, {
        method: 'POST',
        headers: { 'X-ServiceAPI-Key': key, 'Content-Type': 'application/json', ...headers },
        body: JSON.stringify(body),
      }).then(async (res) => {
        const buf = Buffer.from(await res.arrayBuffer())
        const isJson = (res.headers.get('content-type') ?? '').includes('json')
        return {
          status: res.status,
          headers: res.headers,
          text: buf.toString(),
          bytes: buf,
          body: isJson ? JSON.parse(buf.toString()) : undefined,
        }
      })

    it('streams a file named by path or by id, with a read Action for the caller', async () => {
      await uploaded(s, 'pub/direct.bin', content)
      await withChecksums(target(s), 'pub/direct.bin')
      const byPath = await post({ path: '/pub/direct.bin' }, readerKey)
      expect(byPath.status).toBe(200)
      expect(byPath.bytes.equals(content)).toBe(true)
      expect(byPath.headers.get('etag')).toBe(`"${md5(content)}"`)
      expect(byPath.headers.get('content-disposition')).toContain('filename="direct.bin"')
      const id = (await get('pub/direct.bin', '?action=stat')).body.id
      const byId = await post({ id })
      expect(byId.bytes.equals(content)).toBe(true)
      const ranged = await post({ id }, s.adminKey, { Range: 'bytes=100-199' })
      expect(ranged.status).toBe(206)
      expect(ranged.bytes.equals(content.subarray(100, 200))).toBe(true)
      const actions = await reads('pub/direct.bin')
      expect(actions.map((a) => [a.user_id, a.interface])).toEqual([
        [reader.id, 'restapi'],
        [null, 'restapi'],
      ])
    })

    it('refuses both or neither of path and id, folders, missing files and callers without read', async () => {
      expectError(await post({ path: 'pub/data.bin', id: 1 }), 400, 'bad-request/request-params-invalid')
      expectError(await post({}), 400, 'bad-request/request-params-required')
      expectError(await post({ path: 'pub' }), 400, 'bad-request/cannot-download-directory')
      const folderId = (await call(s, 'GET', '/file_actions/metadata/pub', { key: s.adminKey })).body.id
      expectError(await post({ id: folderId }), 400, 'bad-request/cannot-download-directory')
      expectError(await post({ id: 999999 }), 404, 'not-found/file-not-found')
      expectError(await post({ path: 'pub/none' }), 404, 'not-found/file-not-found')
      expectError(
        await post({ path: 'pub/data.bin' }, writeonlyKey),
        403,
        'not-authorized/read-permission-required',
      )
      expectError(
        await post({ path: 'pub/data.bin' }, restrictedKey),
        403,
        'not-authorized/api-key-is-path-restricted',
      )
      expectError(await post({ path: 'pub/data.bin', name: 'x' }), 400, 'bad-request/request-params-invalid')
    })
  })
})
