import zlib from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { call, dialects, useServer } from './helpers/server.js'

/**
 * Wharf decodes no content coding: a request body sent with `Content-Encoding` other than
 * `identity` is refused before it is read, rather than stored or parsed as the encoded bytes.
 */
describe.each(dialects)('Content-Encoding of request bodies (%s)', (dialect) => {
  const s = useServer(dialect)

  const keyNames = async () =>
    (await call(s, 'GET', '/api_keys?per_page=10000', { key: s.adminKey })).body.map(
      (k: { name: string }) => k.name,
    )

  it('refuses an encoded JSON or XML body with unsupported-media-type, storing nothing', async () => {
    const before = await keyNames()
    for (const [encoding, contentType, body] of [
      ['gzip', 'application/json', zlib.gzipSync('{"site_wide":true,"name":"gz"}')],
      ['deflate', 'application/json', zlib.deflateSync('{"site_wide":true,"name":"df"}')],
      ['br', 'application/json', zlib.brotliCompressSync('{"site_wide":true,"name":"br"}')],
      ['GZIP', 'application/xml', zlib.gzipSync('<k><site_wide>true</site_wide><name>x</name></k>')],
      ['identity, gzip', 'application/json', zlib.gzipSync('{"site_wide":true,"name":"ig"}')],
      ['x-unknown', 'application/json', Buffer.from('{"site_wide":true,"name":"xu"}')],
    ] as const) {
      const res = await fetch(`${s.api}/api_keys`, {
        method: 'POST',
        headers: {
          'X-ServiceAPI-Key': s.adminKey,
          'Content-Type': contentType,
          'Content-Encoding': encoding,
        },
        body,
      })
      const json = (await res.json()) as { type: string }
      expect({ encoding, status: res.status, type: json.type }).toEqual({
        encoding,
        status: 400,
        type: 'bad-request/unsupported-media-type',
      })
      expect(res.headers.get('accept-encoding')).toBe('identity')
    }
    expect(await keyNames()).toEqual(before)
  })

  it('accepts identity, as if no coding were named', async () => {
    const r = await call(s, 'POST', '/api_keys', {
      key: s.adminKey,
      body: { site_wide: true, name: 'plain' },
      headers: { 'Content-Encoding': 'identity' },
    })
    expect(r.status).toBe(201)
    expect(r.body.name).toBe('plain')
  })

  it('refuses an encoded upload part without storing it, and takes the same part unencoded', async () => {
    const open = await call(s, 'POST', '/files/enc%2Fpart.txt', { key: s.adminKey, body: { action: 'put' } })
    expect(open.status).toBe(201)
    const ref = open.body.ref as string
    const parts = () =>
      s.container.db
        .selectFrom('upload_parts')
        .innerJoin('uploads', 'uploads.id', 'upload_parts.upload_id')
        .select(['part_number', 'size'])
        .where('uploads.ref', '=', ref)
        .execute()
    const refused = await fetch(open.body.upload_uri, {
      method: 'PUT',
      headers: { 'Content-Encoding': 'gzip' },
      body: zlib.gzipSync('hello'),
    })
    expect(refused.status).toBe(400)
    expect(((await refused.json()) as { type: string }).type).toBe('bad-request/unsupported-media-type')
    expect(await parts()).toEqual([])

    const stored = await fetch(open.body.upload_uri, {
      method: 'PUT',
      headers: { 'Content-Encoding': 'identity' },
      body: 'hello',
    })
    expect(stored.status).toBe(200)
    expect(await parts()).toEqual([{ part_number: 1, size: 5 }])
    const end = await call(s, 'POST', '/files/enc%2Fpart.txt', {
      key: s.adminKey,
      body: { action: 'end', ref },
    })
    expect(end.status).toBe(201)
    expect(end.body.size).toBe(5)
  })
})
