import { XMLParser } from 'fast-xml-parser'
import { describe, expect, it } from 'vitest'
import { negotiate, parseXmlBody, splitFormatSuffix, toXml } from '../src/http/format.js'
import { call, dialects, makeKey, makeUser, useServer } from './helpers/server.js'

// Parses XML responses keeping attributes, so the tests can assert type="…" and nil="true".
const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@_', parseTagValue: false })

const XML = 'application/xml'

describe('format suffixes and negotiation (unit)', () => {
  it('strips .json and .xml, reports any other suffix and leaves file paths alone', () => {
    expect(splitFormatSuffix('/api/rest/v1/api_key.json?x=1')).toEqual({
      url: '/api/rest/v1/api_key?x=1',
      format: 'json',
      badSuffix: undefined,
    })
    expect(splitFormatSuffix('/api/rest/v1/api_keys/7.XML')).toEqual({
      url: '/api/rest/v1/api_keys/7',
      format: 'xml',
      badSuffix: undefined,
    })
    expect(splitFormatSuffix('/api/rest/v1/api_keys.csv')).toEqual({
      url: '/api/rest/v1/api_keys',
      format: undefined,
      badSuffix: 'csv',
    })
    expect(splitFormatSuffix('/api/rest/v1/files/report.xml')).toEqual({
      url: '/api/rest/v1/files/report.xml',
      format: undefined,
      badSuffix: undefined,
    })
    expect(splitFormatSuffix('/elsewhere/a.txt')).toEqual({
      url: '/elsewhere/a.txt',
      format: undefined,
      badSuffix: undefined,
    })
  })

  it('chooses XML only when Accept prefers it over JSON', () => {
    expect(negotiate(undefined)).toBe('json')
    expect(negotiate('*/*')).toBe('json')
    expect(negotiate('application/xml')).toBe('xml')
    expect(negotiate('text/xml')).toBe('xml')
    expect(negotiate('application/json, application/xml')).toBe('json')
    expect(negotiate('application/json;q=0.5, application/xml')).toBe('xml')
    expect(negotiate('application/xml;q=0')).toBe('json')
  })

  it('ranks Accept by quality as RFC 9110 does: */* at q=1 beats XML at q=0.5', () => {
    expect(negotiate('application/xml;q=0.5, */*')).toBe('json')
    expect(negotiate('application/xml;q=0.9, application/*;q=0.8')).toBe('xml')
    // Browsers' defaults: XML at 0.9 outranks JSON through */* at 0.8; without it, JSON.
    expect(negotiate('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8')).toBe('xml')
    expect(negotiate('text/html,application/xhtml+xml,*/*;q=0.8')).toBe('json')
    expect(negotiate('application/*;q=0.2, text/xml')).toBe('xml')
    expect(negotiate('text/html')).toBe('json')
    expect(negotiate('APPLICATION/XML')).toBe('xml')
    expect(negotiate('application/xml;q=0.5, application/json;q=0.4')).toBe('xml')
    expect(negotiate('not a media type;;;')).toBe('json')
  })

  it('renders typed elements, nil and nested arrays', () => {
    const out = toXml({ n: 3, f: 1.5, b: false, s: 'a<b&"c"', none: null, list: ['x'], empty: [] }, 'thing')
    expect(out).toContain('<n type="integer">3</n>')
    expect(out).toContain('<f type="float">1.5</f>')
    expect(out).toContain('<b type="boolean">false</b>')
    expect(out).toContain('<s>a&lt;b&amp;&quot;c&quot;</s>')
    expect(out).toContain('<none nil="true"/>')
    expect(out).toContain('<list type="array">')
    expect(out).toContain('<empty type="array"/>')
    expect(() => xml.parse(out)).not.toThrow()
  })

  it('keeps the output well-formed whatever the keys and text hold', () => {
    const out = toXml(
      { 'a b': 1, '<x/>': 2, '9lives': 3, ok_name: 'ctrl\u0001char \uD800lone \u{1F600} emoji' },
      'thing',
    )
    expect(out).toContain('<a_b type="integer">1</a_b>')
    expect(out).toContain('<_x__ type="integer">2</_x__>')
    expect(out).toContain('<_9lives type="integer">3</_9lives>')
    expect(out).toContain('<ok_name>ctrlchar lone \u{1F600} emoji</ok_name>')
    expect(Object.keys(xml.parse(out).thing).sort()).toEqual(['_9lives', '_x__', 'a_b', 'ok_name'])
  })

  it('never lets an XML field name reach an object prototype', () => {
    for (const name of ['__proto__', 'constructor', 'prototype']) {
      expect(() => parseXmlBody(`<x><${name}><site_wide>true</site_wide></${name}></x>`)).toThrow(
        expect.objectContaining({ type: 'bad-request/invalid-body' }),
      )
    }
    const nested = () => parseXmlBody('<x><a><__proto__><b>1</b></__proto__></a></x>')
    expect(nested).toThrow(expect.objectContaining({ type: 'bad-request/invalid-body' }))
    expect(({} as any).site_wide).toBeUndefined()
  })
})

describe.each(dialects)('formats (%s)', (dialect) => {
  const s = useServer(dialect, { BODY_LIMIT_BYTES: '4096' })

  describe('response formats', () => {
    it('answers JSON with or without the .json suffix', async () => {
      for (const p of ['/api_key', '/api_key.json']) {
        const r = await call(s, 'GET', p, { key: s.adminKey })
        expect(r.status).toBe(200)
        expect(r.headers.get('content-type')).toMatch(/^application\/json/)
        expect(r.body.permission_set).toBe('full')
      }
    })

    it('answers XML for the .xml suffix and for Accept: application/xml without suffix', async () => {
      for (const [p, accept] of [
        ['/api_key.xml', undefined],
        ['/api_key', XML],
        ['/api_key.xml', 'application/json'],
      ] as const) {
        const r = await call(s, 'GET', p, { key: s.adminKey, ...(accept ? { accept } : {}) })
        expect(r.status).toBe(200)
        expect(r.headers.get('content-type')).toMatch(/^application\/xml/)
        expect(r.text.startsWith('<?xml version="1.0" encoding="UTF-8"?>')).toBe(true)
        const doc = xml.parse(r.text)
        expect(Object.keys(doc).filter((k) => k !== '?xml')).toEqual(['api-key'])
      }
    })

    it('answers JSON to Accept: application/xml;q=0.5, */* (JSON ranks 1 through */*)', async () => {
      const r = await call(s, 'GET', '/api_key', { key: s.adminKey, accept: 'application/xml;q=0.5, */*' })
      expect(r.status).toBe(200)
      expect(r.headers.get('content-type')).toMatch(/^application\/json/)
      expect(r.body.permission_set).toBe('full')
    })

    it('lets the suffix win over Accept', async () => {
      const r = await call(s, 'GET', '/api_key.json', { key: s.adminKey, accept: XML })
      expect(r.status).toBe(200)
      expect(r.headers.get('content-type')).toMatch(/^application\/json/)
    })

    it('refuses any other suffix with an error body', async () => {
      for (const p of ['/api_key.csv', '/api_keys.txt']) {
        const r = await call(s, 'GET', p, { key: s.adminKey })
        expect(r.status).toBe(400)
        expect(r.body.type).toBe('bad-request/unsupported-http-response-format')
        expect(r.body['http-code']).toBe(400)
      }
      const x = await call(s, 'GET', '/api_keys.txt', { key: s.adminKey, accept: XML })
      expect(x.status).toBe(400)
      expect(xml.parse(x.text).error_response.type).toBe('bad-request/unsupported-http-response-format')
    })

    it('refuses an unsupported suffix even before authentication', async () => {
      const r = await call(s, 'GET', '/api_key.csv')
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/unsupported-http-response-format')
    })

    it('renders a record under its hyphenated singular root with typed and nil fields', async () => {
      const user = await makeUser(s)
      const k = await makeKey(s, user.id, { name: 'xml-record' })
      const r = await call(s, 'GET', '/api_key.xml', { key: k.key })
      expect(r.status).toBe(200)
      const rec = xml.parse(r.text)['api-key']
      expect(rec.id).toEqual({ '#text': String(k.id), '@_type': 'integer' })
      expect(rec.user_id).toEqual({ '#text': String(user.id), '@_type': 'integer' })
      expect(rec.name).toBe('xml-record')
      expect(rec.permission_set).toBe('full')
      expect(rec.expires_at).toEqual({ '@_nil': 'true' })
      expect(rec.description).toEqual({ '@_nil': 'true' })
      expect(rec.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/)
      expect(rec.key).toBeUndefined()
    })

    it('renders a list under the plural root with type="array" and singular items', async () => {
      const user = await makeUser(s)
      const a = await makeKey(s, user.id, { name: 'list-a' })
      const b = await makeKey(s, user.id, { name: 'list-b' })
      const r = await call(s, 'GET', `/api_keys.xml?user_id=${user.id}`, { key: s.adminKey })
      expect(r.status).toBe(200)
      const list = xml.parse(r.text)['api-keys']
      expect(list['@_type']).toBe('array')
      expect(list['api-key'].map((i: any) => i.id['#text'])).toEqual([String(a.id), String(b.id)])
      expect(list['api-key'].map((i: any) => i.name)).toEqual(['list-a', 'list-b'])
    })

    it('renders an empty list as a self-closed plural root', async () => {
      const user = await makeUser(s)
      const r = await call(s, 'GET', `/api_keys.xml?user_id=${user.id}`, { key: s.adminKey })
      expect(r.status).toBe(200)
      expect(r.text).toBe('<?xml version="1.0" encoding="UTF-8"?>\n<api-keys type="array"/>\n')
      const j = await call(s, 'GET', `/api_keys?user_id=${user.id}`, { key: s.adminKey })
      expect(j.body).toEqual([])
    })

    it('renders errors under error_response with the JSON fields and types', async () => {
      const r = await call(s, 'GET', '/api_key.xml', { key: 'f'.repeat(64) })
      expect(r.status).toBe(401)
      expect(r.headers.get('content-type')).toMatch(/^application\/xml/)
      const e = xml.parse(r.text).error_response
      expect(Object.keys(e).sort()).toEqual(['error', 'http-code', 'instance', 'title', 'type'])
      expect(e['http-code']).toEqual({ '#text': '401', '@_type': 'integer' })
      expect(e.type).toBe('not-authenticated/authentication-required')
      expect(e.title).toBe('Authentication Required')
    })
  })

  describe('request bodies', () => {
    const postXml = (body: string, contentType = XML) =>
      call(s, 'POST', '/api_keys', { key: s.adminKey, raw: body, contentType })

    it('creates a key from an XML body with any root element', async () => {
      const user = await makeUser(s)
      const r = await postXml(
        `<?xml version="1.0"?><whatever><user_id type="integer">${user.id}</user_id><name>from &amp; xml</name><expires_at>2040-01-02</expires_at></whatever>`,
      )
      expect(r.status).toBe(201)
      expect(r.body.user_id).toBe(user.id)
      expect(r.body.name).toBe('from & xml')
      expect(r.body.expires_at).toBe('2040-01-02T00:00:00Z')
      expect(r.body.key).toMatch(/^[0-9a-f]{64}$/)
    })

    it('accepts text/xml and answers XML when asked', async () => {
      const user = await makeUser(s)
      const r = await call(s, 'POST', '/api_keys.xml', {
        key: s.adminKey,
        raw: `<api-key><user_id>${user.id}</user_id><name>answer-xml</name></api-key>`,
        contentType: 'text/xml; charset=utf-8',
      })
      expect(r.status).toBe(201)
      const rec = xml.parse(r.text)['api-key']
      expect(rec.name).toBe('answer-xml')
      expect(rec.user_id['#text']).toBe(String(user.id))
      expect(rec.key).toMatch(/^[0-9a-f]{64}$/)
    })

    it('honours type="boolean" and coerces plain strings by the schema', async () => {
      const typed = await postXml(
        '<api-key><site_wide type="boolean">true</site_wide><name>typed</name></api-key>',
      )
      expect(typed.status).toBe(201)
      expect(typed.body.user_id).toBeNull()
      const plain = await postXml('<api-key><site_wide>true</site_wide><name>plain</name></api-key>')
      expect(plain.status).toBe(201)
      expect(plain.body.user_id).toBeNull()
      const user = await makeUser(s)
      const owned = await postXml(
        `<api-key><site_wide type="boolean">false</site_wide><user_id>${user.id}</user_id></api-key>`,
      )
      expect(owned.status).toBe(201)
      expect(owned.body.user_id).toBe(user.id)
    })

    it('reports a wrongly typed XML field as an invalid parameter', async () => {
      const r = await postXml('<api-key><user_id>seven</user_id></api-key>')
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/request-params-invalid')
    })

    it('decodes the predefined entities and character references, and keeps CDATA as written', async () => {
      const r = await postXml(
        '<api-key><site_wide>true</site_wide><name>caf&#233; &#xE9;&#x1F600; &lt;&gt;&amp;&apos;&quot;<![CDATA[&#233;&foo;]]></name></api-key>',
      )
      expect(r.status).toBe(201)
      expect(r.body.name).toBe('café é😀 <>&\'"&#233;&foo;')
    })

    it('refuses undeclared entities and references to no XML character, storing nothing', async () => {
      const names = async () =>
        (await call(s, 'GET', '/api_keys?per_page=10000', { key: s.adminKey })).body.map(
          (k: { name: string }) => k.name,
        )
      const before = await names()
      for (const ref of [
        '&foo;',
        '&nbsp;',
        '&#0;',
        '&#1;',
        '&#xD800;',
        '&#x110000;',
        '&#X41;',
        '&#99999999999;',
        '&#;',
        '&#x;',
        '&;',
        'a & b',
        '&amp',
      ]) {
        const r = await postXml(`<api-key><site_wide>true</site_wide><name>x${ref}y</name></api-key>`)
        expect({ ref, status: r.status, type: r.body?.type }).toEqual({
          ref,
          status: 400,
          type: 'bad-request/invalid-body',
        })
      }
      const r = await postXml('<api-key site="&foo;"><site_wide>true</site_wide><name>attr</name></api-key>')
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/invalid-body')
      expect(await names()).toEqual(before)
    })

    it('refuses a DOCTYPE that would read a local file (XXE) without echoing it', async () => {
      const r = await postXml(
        '<?xml version="1.0"?><!DOCTYPE k [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><api-key><name>&xxe;</name><site_wide>true</site_wide></api-key>',
      )
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/invalid-body')
      expect(r.text).not.toContain('root:')
    })

    it('refuses entity expansion (billion laughs)', async () => {
      const lol = [
        '<?xml version="1.0"?>',
        '<!DOCTYPE lolz [',
        '<!ENTITY lol "lol">',
        ...Array.from({ length: 8 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i || ''};`.repeat(10)}">`),
        ']>',
        '<api-key><name>&lol8;</name><site_wide>true</site_wide></api-key>',
      ].join('')
      const r = await postXml(lol)
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/invalid-body')
    })

    it('refuses a DOCTYPE however it is spelled, and an internal entity without DOCTYPE', async () => {
      for (const body of [
        '<!doctype x><x><name>a</name></x>',
        '<x><!ENTITY a "b"><name>a</name></x>',
        '<?xml version="1.0"?>\n<!DOCTYPE x SYSTEM "http://127.0.0.1:1/x.dtd"><x/>',
      ]) {
        const r = await postXml(body)
        expect(r.status).toBe(400)
        expect(r.body.type).toBe('bad-request/invalid-body')
      }
    })

    it('refuses malformed XML', async () => {
      for (const body of [
        '<api-key><name>x</api-key>',
        '<a><name>x</name></a><b/>',
        'not xml at all',
        '<a><b>1</b',
      ]) {
        const r = await postXml(body)
        expect(r.status).toBe(400)
        expect(r.body.type).toBe('bad-request/invalid-body')
      }
    })

    it('refuses an XML field named after an object prototype', async () => {
      const r = await postXml('<api-key><__proto__><site_wide>true</site_wide></__proto__></api-key>')
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/invalid-body')
    })

    it('refuses malformed JSON', async () => {
      for (const body of ['{"name": ', '{name: "x"}', "{'name': 'x'}", '{"name":"x"} trailing']) {
        const r = await call(s, 'POST', '/api_keys', { key: s.adminKey, raw: body })
        expect(r.status).toBe(400)
        expect(r.body.type).toBe('bad-request/invalid-body')
      }
    })

    it('refuses a JSON body that is not an object', async () => {
      for (const body of ['[1,2]', '[]', '"a string"', '42', 'true', 'null']) {
        const r = await call(s, 'POST', '/api_keys', { key: s.adminKey, raw: body })
        expect(r.status).toBe(400)
        expect(r.body.type).toBe('bad-request/invalid-body')
      }
    })

    it('refuses __proto__ and constructor.prototype keys in JSON', async () => {
      for (const body of [
        '{"__proto__": {"site_wide": true}, "name": "p"}',
        '{"name": "p", "constructor": {"prototype": {"site_wide": true}}}',
      ]) {
        const r = await call(s, 'POST', '/api_keys', { key: s.adminKey, raw: body })
        expect(r.status).toBe(400)
        expect(r.body.type).toBe('bad-request/invalid-body')
      }
      expect(({} as any).site_wide).toBeUndefined()
    })

    it('refuses other content types with unsupported-media-type', async () => {
      for (const contentType of [
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
      ]) {
        const r = await call(s, 'POST', '/api_keys', { key: s.adminKey, raw: 'name=x', contentType })
        expect(r.status).toBe(400)
        expect(r.body.type).toBe('bad-request/unsupported-media-type')
      }
    })

    it('refuses a body over BODY_LIMIT_BYTES', async () => {
      const big = JSON.stringify({ description: 'x'.repeat(5000) })
      const r = await call(s, 'POST', '/api_keys', { key: s.adminKey, raw: big })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/invalid-body')
      const bigXml = `<k><description>${'x'.repeat(5000)}</description></k>`
      const x = await postXml(bigXml)
      expect(x.status).toBe(400)
      expect(x.body.type).toBe('bad-request/invalid-body')
      // Just under the limit is fine (the description limit is 4096, so stay under both).
      const ok = await call(s, 'POST', '/api_keys', {
        key: s.adminKey,
        body: { site_wide: true, description: 'y'.repeat(3900) },
      })
      expect(ok.status).toBe(201)
    })

    it('takes parameters from the query string of a POST without body', async () => {
      const r = await call(s, 'POST', '/api_keys?name=from-query&site_wide=true', { key: s.adminKey })
      expect(r.status).toBe(201)
      expect(r.body.name).toBe('from-query')
      expect(r.body.user_id).toBeNull()
      const shown = await call(s, 'GET', `/api_keys/${r.body.id}`, { key: s.adminKey })
      expect(shown.body.name).toBe('from-query')
    })

    it('merges query parameters under a body, the body winning', async () => {
      const r = await call(s, 'POST', '/api_keys?name=from-query&description=q', {
        key: s.adminKey,
        body: { site_wide: true, name: 'from-body' },
      })
      expect(r.status).toBe(201)
      expect(r.body.name).toBe('from-body')
      expect(r.body.description).toBe('q')
    })

    it('treats an empty JSON or XML body as no fields', async () => {
      const j = await call(s, 'POST', '/api_keys?site_wide=true&name=empty-json', {
        key: s.adminKey,
        raw: '',
      })
      expect(j.status).toBe(201)
      expect(j.body.name).toBe('empty-json')
      const x = await postXml('<api-key/>')
      // No user and no site_wide: a site-wide caller must say which.
      expect(x.status).toBe(400)
      expect(x.body.type).toBe('bad-request/user-required')
    })
  })
})
