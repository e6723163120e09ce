import crypto from 'node:crypto'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  call,
  dialects,
  expectError,
  login,
  makeKey,
  makeUser,
  type TestUser,
  useServer,
} from './helpers/server.js'

const HEX64 = /^[0-9a-f]{64}$/
const ISO_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/
const KEY_FIELDS = [
  'created_at',
  'description',
  'descriptive_label',
  'expires_at',
  'id',
  'last_use_at',
  'name',
  'path',
  'permission_set',
  'platform',
  'url',
  'user_id',
]
const HOUR = 60 * 60 * 1000

const basic = (user: string, password: string) => ({
  Authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
})

describe.each(dialects)('API keys (%s)', (dialect) => {
  let alice: TestUser
  let aliceKey: { id: number; key: string }
  let bob: TestUser
  let bobKey: { id: number; key: string }
  let adminSession: string

  const s = useServer(dialect)
  beforeAll(async () => {
    alice = await makeUser(s, { username: `alice-${dialect}` })
    aliceKey = await makeKey(s, alice.id, { name: 'alice main' })
    bob = await makeUser(s)
    bobKey = await makeKey(s, bob.id)
    adminSession = await login(s, ADMIN_USERNAME, ADMIN_PASSWORD)
  })

  const keyRow = (id: number) =>
    s.container.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst()

  /** Actions of one kind whose targets name the key. */
  async function actionsFor(action: string, keyId: number) {
    const rows = await s.container.db
      .selectFrom('actions')
      .selectAll()
      .where('action', '=', action)
      .orderBy('id')
      .execute()
    return rows.filter((r) =>
      (JSON.parse(r.targets) as { type: string; id?: number }[]).some(
        (t) => t.type === 'api_key' && t.id === keyId,
      ),
    )
  }

  describe('POST /api_keys', () => {
    it('creates a key for the caller and returns the plain key once', async () => {
      const before = Date.now()
      const r = await call(s, 'POST', '/api_keys', {
        key: aliceKey.key,
        body: { name: 'laptop', description: 'for the laptop', expires_at: '2099-05-06T07:08:09Z' },
      })
      expect(r.status).toBe(201)
      expect(Object.keys(r.body).sort()).toEqual([...KEY_FIELDS, 'key'].sort())
      expect(r.body.key).toMatch(HEX64)
      expect(r.body).toMatchObject({
        descriptive_label: `User API key for ${alice.username} (key ID #${r.body.id})`,
        description: 'for the laptop',
        expires_at: '2099-05-06T07:08:09Z',
        last_use_at: null,
        name: 'laptop',
        path: null,
        permission_set: 'full',
        platform: null,
        url: s.url,
        user_id: alice.id,
      })
      expect(r.body.created_at).toMatch(ISO_Z)
      const created = Date.parse(r.body.created_at)
      expect(created).toBeGreaterThanOrEqual(before - 1000)
      expect(created).toBeLessThanOrEqual(Date.now())

      const me = await call(s, 'GET', '/api_key', { key: r.body.key })
      expect(me.status).toBe(200)
      expect(me.body.id).toBe(r.body.id)
      expect(me.body.key).toBeUndefined()
      expect(Object.keys(me.body).sort()).toEqual(KEY_FIELDS)
    })

    it('treats user_id 0 as the caller, for a key and for a session', async () => {
      const byKey = await call(s, 'POST', '/api_keys', { key: aliceKey.key, body: { user_id: 0 } })
      expect(byKey.status).toBe(201)
      expect(byKey.body.user_id).toBe(alice.id)
      const session = await login(s, alice.username, alice.password)
      const bySession = await call(s, 'POST', '/api_keys', {
        session,
        body: { user_id: 0, name: 'from session' },
      })
      expect(bySession.status).toBe(201)
      expect(bySession.body.user_id).toBe(alice.id)
      expect(bySession.body.key).toMatch(HEX64)
    })

    it('lets a site admin create a key for another user', async () => {
      const r = await call(s, 'POST', '/api_keys', {
        session: adminSession,
        body: { user_id: bob.id, permission_set: 'desktop_app' },
      })
      expect(r.status).toBe(201)
      expect(r.body).toMatchObject({ user_id: bob.id, permission_set: 'desktop_app' })
      expect(r.body.descriptive_label).toBe(`User API key for ${bob.username} (key ID #${r.body.id})`)
    })

    it('answers 404 user-not-found when a site admin names an unknown user', async () => {
      const r = await call(s, 'POST', '/api_keys', { key: s.adminKey, body: { user_id: 987654 } })
      expectError(r, 404, 'not-found/user-not-found')
    })

    it('refuses a non-admin naming another user_id', async () => {
      const r = await call(s, 'POST', '/api_keys', { key: aliceKey.key, body: { user_id: bob.id } })
      expectError(r, 403, 'not-authorized/user-id-without-site-admin')
    })

    it('requires user_id when a site-wide key creates a user key', async () => {
      expectError(
        await call(s, 'POST', '/api_keys', { key: s.adminKey, body: { name: 'x' } }),
        400,
        'bad-request/user-required',
      )
      expectError(
        await call(s, 'POST', '/api_keys', { key: s.adminKey, body: { user_id: 0 } }),
        400,
        'bad-request/user-required',
      )
    })

    it('creates site-wide keys for site admins only, always with permission set full', async () => {
      const r = await call(s, 'POST', '/api_keys', {
        session: adminSession,
        body: { site_wide: true, name: 'robot' },
      })
      expect(r.status).toBe(201)
      expect(r.body).toMatchObject({
        user_id: null,
        permission_set: 'full',
        descriptive_label: `Site-wide API key (key ID #${r.body.id})`,
      })
      expect(r.body.key).toMatch(HEX64)
      const list = await call(s, 'GET', '/api_keys', { key: r.body.key })
      expect(list.status).toBe(200)

      const byUser = await call(s, 'POST', '/api_keys', { key: aliceKey.key, body: { site_wide: true } })
      expectError(byUser, 403, 'not-authorized/site-admin-required')

      const notFull = await call(s, 'POST', '/api_keys', {
        key: s.adminKey,
        body: { site_wide: true, permission_set: 'desktop_app' },
      })
      expectError(notFull, 422, 'processing-failure/model-save-error')
      expect(Object.keys(notFull.body.model_errors)).toEqual(['permission_set'])
      expect(notFull.body.errors.length).toBe(1)

      const withPath = await call(s, 'POST', '/api_keys', {
        key: s.adminKey,
        body: { site_wide: true, path: 'docs' },
      })
      expectError(withPath, 422, 'processing-failure/model-save-error')
      expect(Object.keys(withPath.body.model_errors)).toEqual(['path'])
      const withUser = await call(s, 'POST', '/api_keys', {
        key: s.adminKey,
        body: { site_wide: true, user_id: bob.id },
      })
      expectError(withUser, 400, 'bad-request/request-params-invalid')
    })

    it('accepts an XML body and answers in XML', async () => {
      const r = await call(s, 'POST', '/api_keys.xml', {
        key: aliceKey.key,
        raw: '<api-key><name>xml key</name><permission_set>sync_app</permission_set></api-key>',
        contentType: 'application/xml',
      })
      expect(r.status).toBe(201)
      expect(r.text).toContain('<api-key>')
      expect(r.text).toContain('<name>xml key</name>')
      expect(r.text).toContain('<permission_set>sync_app</permission_set>')
      expect(r.text).toMatch(/<key>[0-9a-f]{64}<\/key>/)
      expect(r.text).toContain(`<user_id type="integer">${alice.id}</user_id>`)
      expect(r.text).toContain('<expires_at nil="true"/>')
    })

    it('refuses control characters and bidirectional overrides in name and description', async () => {
      const INVALID = 'bad-request/request-params-contain-invalid-character'
      const post = (body: unknown) => call(s, 'POST', '/api_keys', { key: aliceKey.key, body })
      // C0, DEL, C1, the overrides, embeddings and isolates, and line breaks in a one-line name.
      for (const c of ['\u0000', '\u0007', '\t', '\n', '\r', '\u007f', '\u0085', '\u009b']) {
        expectError(await post({ name: `a${c}b` }), 400, INVALID)
      }
      for (const c of [
        '\u202a',
        '\u202b',
        '\u202c',
        '\u202d',
        '\u202e',
        '\u2066',
        '\u2067',
        '\u2068',
        '\u2069',
      ]) {
        const r = await post({ name: `invoice${c}fdp.exe` })
        expectError(r, 400, INVALID)
        expect(r.body.error).toMatch(/^name must not contain .* \(U\+20[26][0-9A-E] at character 8\)$/)
        expectError(await post({ description: `x${c}y` }), 400, INVALID)
      }
      for (const c of ['\u0000', '\u000b', '\u001b', '\u0085']) {
        expectError(await post({ description: `line${c}` }), 400, INVALID)
      }
      expectError(await post({ name: 'a\u2028b' }), 400, INVALID)
      // Through the query string (merged into the body) and in an XML body (a reference).
      expectError(await call(s, 'POST', '/api_keys?name=a%E2%80%AEb', { key: aliceKey.key }), 400, INVALID)
      const xmlBody = await call(s, 'POST', '/api_keys', {
        key: aliceKey.key,
        raw: '<api-key><name>a&#x202E;b</name></api-key>',
        contentType: 'application/xml',
      })
      expectError(xmlBody, 400, INVALID)
      const xmlC1 = await call(s, 'POST', '/api_keys', {
        key: aliceKey.key,
        raw: '<api-key><description>a&#x85;b</description></api-key>',
        contentType: 'application/xml',
      })
      expectError(xmlC1, 400, INVALID)
      // A description is multi-line by nature: line breaks and tabs stay; so do right-to-left
      // text and its implicit marks, and any printable character.
      const ok = await post({
        name: 'שלום\u200f 2024 \u200e(ok) ☃ 😀',
        description: 'first line\r\nsecond\tline\n\u2028third',
      })
      expect(ok.status).toBe(201)
      expect(ok.body.name).toBe('שלום\u200f 2024 \u200e(ok) ☃ 😀')
      expect(ok.body.description).toBe('first line\r\nsecond\tline\n\u2028third')
      // PATCH, by id and on the key of the request, refuses them too and changes nothing.
      const patched = await call(s, 'PATCH', `/api_keys/${ok.body.id}`, {
        key: aliceKey.key,
        body: { name: 'x\u202ey', description: 'fine' },
      })
      expectError(patched, 400, INVALID)
      const self = await call(s, 'PATCH', '/api_key', { key: ok.body.key, body: { name: '\u2067x' } })
      expectError(self, 400, INVALID)
      const shown = await call(s, 'GET', `/api_keys/${ok.body.id}`, { key: aliceKey.key })
      expect(shown.body.description).toBe('first line\r\nsecond\tline\n\u2028third')
      expect(shown.body.name).toBe('שלום\u200f 2024 \u200e(ok) ☃ 😀')
    })

    it('parses expires_at as a date, a date-time with offset, or refuses it', async () => {
      const dateOnly = await call(s, 'POST', '/api_keys', {
        key: aliceKey.key,
        body: { expires_at: '2099-01-02' },
      })
      expect(dateOnly.status).toBe(201)
      expect(dateOnly.body.expires_at).toBe('2099-01-02T00:00:00Z')
      const offset = await call(s, 'POST', '/api_keys', {
        key: aliceKey.key,
        body: { expires_at: '2099-01-02T10:30:00+02:00' },
      })
      expect(offset.status).toBe(201)
      expect(offset.body.expires_at).toBe('2099-01-02T08:30:00Z')
      const none = await call(s, 'POST', '/api_keys', { key: aliceKey.key, body: { expires_at: null } })
      expect(none.status).toBe(201)
      expect(none.body.expires_at).toBeNull()

      for (const bad of ['tomorrow', '2099-13-01', '2099-02-30T00:00:00Z', '2099-01-01T25:00:00Z']) {
        expectError(
          await call(s, 'POST', '/api_keys', { key: aliceKey.key, body: { expires_at: bad } }),
          400,
          'bad-request/datetime-parse',
        )
      }
      const past = await call(s, 'POST', '/api_keys', {
        key: aliceKey.key,
        body: { expires_at: '2001-01-01T00:00:00Z' },
      })
      expectError(past, 422, 'processing-failure/model-save-error')
      expect(Object.keys(past.body.model_errors)).toEqual(['expires_at'])
      expect(past.body.model_error_keys.expires_at.length).toBe(1)
    })

    it('refuses an unknown permission_set with model_errors.permission_set', async () => {
      const r = await call(s, 'POST', '/api_keys', {
        key: aliceKey.key,
        body: { permission_set: 'superuser' },
      })
      expectError(r, 422, 'processing-failure/model-save-error')
      expect(Object.keys(r.body.model_errors)).toEqual(['permission_set'])
    })

    it('normalises the folder path and refuses bad ones', async () => {
      const ok = await call(s, 'POST', '/api_keys', { key: aliceKey.key, body: { path: '/docs/reports/' } })
      expect(ok.status).toBe(201)
      expect(ok.body.path).toBe('docs/reports')
      const root = await call(s, 'POST', '/api_keys', { key: aliceKey.key, body: { path: '/' } })
      expect(root.status).toBe(201)
      expect(root.body.path).toBeNull()

      expectError(
        await call(s, 'POST', '/api_keys', { key: aliceKey.key, body: { path: 'a/../b' } }),
        400,
        'bad-request/invalid-path',
      )
      expectError(
        await call(s, 'POST', '/api_keys', { key: aliceKey.key, body: { path: 'a\u0000b' } }),
        400,
        'bad-request/invalid-path',
      )
      const long = await call(s, 'POST', '/api_keys', { key: aliceKey.key, body: { path: 'a'.repeat(5001) } })
      expectError(long, 422, 'processing-failure/path-too-long')
      const max = await call(s, 'POST', '/api_keys', { key: aliceKey.key, body: { path: 'a'.repeat(5000) } })
      expect(max.status).toBe(201)
    })

    it('refuses wrong types, unknown fields, malformed bodies and oversized values', async () => {
      const post = (o: Parameters<typeof call>[3]) =>
        call(s, 'POST', '/api_keys', { key: aliceKey.key, ...o })
      expectError(await post({ body: { user_id: 'abc' } }), 400, 'bad-request/request-params-invalid')
      expectError(await post({ body: { user_id: -1 } }), 400, 'bad-request/request-params-invalid')
      expectError(await post({ body: { name: { a: 1 } } }), 400, 'bad-request/request-params-invalid')
      expectError(await post({ body: { site_wide: 'maybe' } }), 400, 'bad-request/request-params-invalid')
      expectError(await post({ body: { colour: 'red' } }), 400, 'bad-request/request-params-invalid')
      expectError(await post({ body: { name: 'n'.repeat(256) } }), 400, 'bad-request/request-params-invalid')
      expectError(
        await post({ body: { description: 'd'.repeat(4097) } }),
        400,
        'bad-request/request-params-invalid',
      )
      expectError(await post({ raw: '{"name": "x",' }), 400, 'bad-request/invalid-body')
      expectError(await post({ raw: '[1, 2]' }), 400, 'bad-request/invalid-body')
      expectError(
        await post({ raw: '<api-key><name>x</api-key>', contentType: 'application/xml' }),
        400,
        'bad-request/invalid-body',
      )
      expectError(
        await post({ raw: 'name=x', contentType: 'text/plain' }),
        400,
        'bad-request/unsupported-media-type',
      )
      const ok = await post({ body: { name: 'n'.repeat(255) } })
      expect(ok.status).toBe(201)
    })

    it('records an api_key_create Action with the actor, address and interface', async () => {
      const r = await call(s, 'POST', '/api_keys', { key: aliceKey.key, body: { name: 'audited' } })
      expect(r.status).toBe(201)
      const actions = await actionsFor('api_key_create', r.body.id)
      expect(actions).toHaveLength(1)
      expect(actions[0]).toMatchObject({
        user_id: alice.id,
        username: alice.username,
        ip: '127.0.0.1',
        interface: 'restapi',
      })

      const bySiteKey = await call(s, 'POST', '/api_keys', { key: s.adminKey, body: { user_id: bob.id } })
      const siteActions = await actionsFor('api_key_create', bySiteKey.body.id)
      expect(siteActions).toHaveLength(1)
      expect(siteActions[0]).toMatchObject({
        user_id: null,
        username: null,
        ip: '127.0.0.1',
        interface: 'restapi',
      })
    })

    it('stores keys only as a hash', async () => {
      const r = await call(s, 'POST', '/api_keys', { key: aliceKey.key, body: { name: 'hashed' } })
      const plain: string = r.body.key
      const rows = await s.container.db.selectFrom('api_keys').selectAll().execute()
      expect(JSON.stringify(rows)).not.toContain(plain)
      expect(JSON.stringify(rows)).not.toContain(aliceKey.key)
      const row = rows.find((x) => x.id === r.body.id)!
      expect(row.key_hash).toBe(crypto.createHash('sha256').update(plain).digest('hex'))
    })
  })

  describe('GET /api_keys', () => {
    it('lists the caller’s own keys; a site admin sees every key', async () => {
      const own = await call(s, 'GET', '/api_keys', { key: bobKey.key })
      expect(own.status).toBe(200)
      expect(own.body.length).toBeGreaterThan(0)
      expect(own.body.every((k: any) => k.user_id === bob.id)).toBe(true)
      expect(own.body.some((k: any) => k.id === bobKey.id)).toBe(true)
      expect(own.body.every((k: any) => k.key === undefined)).toBe(true)
      expect(Object.keys(own.body[0]).sort()).toEqual(KEY_FIELDS)

      const zero = await call(s, 'GET', '/api_keys?user_id=0', { key: bobKey.key })
      expect(zero.body.map((k: any) => k.id)).toEqual(own.body.map((k: any) => k.id))

      const all = await call(s, 'GET', '/api_keys', { key: s.adminKey })
      const owners = new Set(all.body.map((k: any) => k.user_id))
      expect(owners.has(alice.id) && owners.has(bob.id) && owners.has(null)).toBe(true)

      const forBob = await call(s, 'GET', `/api_keys?user_id=${bob.id}`, { session: adminSession })
      expect(forBob.body.map((k: any) => k.id)).toEqual(own.body.map((k: any) => k.id))
    })

    it('refuses a non-admin naming another user_id, and a malformed one', async () => {
      expectError(
        await call(s, 'GET', `/api_keys?user_id=${alice.id}`, { key: bobKey.key }),
        403,
        'not-authorized/user-id-without-site-admin',
      )
      expectError(
        await call(s, 'GET', '/api_keys?user_id=x', { key: bobKey.key }),
        400,
        'bad-request/request-params-invalid',
      )
      expectError(
        await call(s, 'GET', '/api_keys?colour=red', { key: bobKey.key }),
        400,
        'bad-request/request-params-invalid',
      )
    })

    it('sorts, filters and pages by expires_at', async () => {
      const u = await makeUser(s)
      const k1 = await makeKey(s, u.id, { expires_at: '2031-01-01T00:00:00Z' })
      const k2 = await makeKey(s, u.id, { expires_at: '2030-01-01T00:00:00Z' })
      const k3 = await makeKey(s, u.id)
      const k4 = await makeKey(s, u.id, { expires_at: '2032-06-01T00:00:00Z' })
      const ids = async (q: string) => {
        const r = await call(s, 'GET', `/api_keys?user_id=${u.id}&${q}`, { key: s.adminKey })
        expect(r.status).toBe(200)
        return r.body.map((k: any) => k.id)
      }
      expect(await ids('per_page=10')).toEqual([k1.id, k2.id, k3.id, k4.id])
      expect(await ids('sort_by[expires_at]=desc')).toEqual([k3.id, k4.id, k1.id, k2.id])
      expect(await ids('sort_by[expires_at]=asc')).toEqual([k2.id, k1.id, k4.id, k3.id])
      expect(await ids('filter_gt[expires_at]=2030-06-01')).toEqual([k1.id, k4.id])
      expect(await ids('filter_gt[expires_at]=2030-06-01&sort_by[expires_at]=desc')).toEqual([k4.id, k1.id])
      expect(await ids('filter_lteq[expires_at]=2031-01-01T00:00:00Z')).toEqual([k1.id, k2.id])
      expect(await ids('filter[expires_at]=2030-01-01T01:00:00%2B01:00')).toEqual([k2.id])

      const p1 = await call(s, 'GET', `/api_keys?user_id=${u.id}&sort_by[expires_at]=desc&per_page=2`, {
        key: s.adminKey,
      })
      expect(p1.body.map((k: any) => k.id)).toEqual([k3.id, k4.id])
      const next = p1.headers.get('x-service-cursor-next')!
      expect(next).toBeTruthy()
      expect(p1.headers.get('x-files-cursor-next')).toBe(next)
      const p2 = await call(
        s,
        'GET',
        `/api_keys?user_id=${u.id}&sort_by[expires_at]=desc&per_page=2&cursor=${encodeURIComponent(next)}`,
        {
          key: s.adminKey,
        },
      )
      expect(p2.body.map((k: any) => k.id)).toEqual([k1.id, k2.id])
      expect(p2.headers.get('x-service-cursor-next')).toBeNull()
      expect(p2.headers.get('x-service-cursor-prev')).toBeTruthy()
      const foreign = await call(
        s,
        'GET',
        `/api_keys?user_id=${bob.id}&sort_by[expires_at]=desc&per_page=2&cursor=${encodeURIComponent(next)}`,
        {
          key: s.adminKey,
        },
      )
      expectError(foreign, 400, 'bad-request/invalid-cursor')
    })

    it('refuses unknown sort and filter fields and bad values', async () => {
      const get = (q: string) => call(s, 'GET', `/api_keys?${q}`, { key: s.adminKey })
      expectError(await get('sort_by[name]=asc'), 400, 'bad-request/invalid-filter-field')
      expectError(await get('filter[name]=x'), 400, 'bad-request/invalid-filter-field')
      expectError(await get('filter_gt[created_at]=2020-01-01'), 400, 'bad-request/invalid-filter-field')
      expectError(await get('filter_gt[expires_at]=soon'), 400, 'bad-request/datetime-parse')
      expectError(await get('sort_by[expires_at]=sideways'), 400, 'bad-request/request-params-invalid')
      expectError(await get('per_page=0'), 400, 'bad-request/request-params-invalid')
    })

    it('lists in XML with the plural root', async () => {
      const r = await call(s, 'GET', `/api_keys.xml?user_id=${bob.id}`, { key: s.adminKey })
      expect(r.status).toBe(200)
      expect(r.text).toContain('<api-keys type="array">')
      expect(r.text).toContain('<api-key>')
      expect(r.text).not.toContain('<key>')
    })
  })

  describe('GET, PATCH and DELETE /api_keys/{id}', () => {
    it('shows a key to its owner and to site admins, and refuses others', async () => {
      const own = await call(s, 'GET', `/api_keys/${aliceKey.id}`, { key: aliceKey.key })
      expect(own.status).toBe(200)
      expect(Object.keys(own.body).sort()).toEqual(KEY_FIELDS)
      expect(own.body).toMatchObject({ id: aliceKey.id, name: 'alice main', user_id: alice.id, url: s.url })
      expect(own.body.last_use_at).toMatch(ISO_Z)

      expect((await call(s, 'GET', `/api_keys/${aliceKey.id}`, { session: adminSession })).status).toBe(200)
      expectError(
        await call(s, 'GET', `/api_keys/${aliceKey.id}`, { key: bobKey.key }),
        403,
        'not-authorized/site-admin-required',
      )
      expectError(
        await call(s, 'GET', '/api_keys/987654', { key: aliceKey.key }),
        404,
        'not-found/api-key-not-found',
      )
      expectError(
        await call(s, 'GET', '/api_keys/abc', { key: aliceKey.key }),
        400,
        'bad-request/request-params-invalid',
      )
      expectError(
        await call(s, 'GET', '/api_keys/0', { key: aliceKey.key }),
        400,
        'bad-request/request-params-invalid',
      )
    })

    it('updates a key, records api_key_update, and refuses others’ keys', async () => {
      const k = await makeKey(s, alice.id, { name: 'to update' })
      const r = await call(s, 'PATCH', `/api_keys/${k.id}`, {
        key: aliceKey.key,
        body: {
          id: k.id,
          name: 'updated',
          description: 'new text',
          expires_at: '2098-03-04',
          permission_set: 'mobile_app',
        },
      })
      expect(r.status).toBe(200)
      expect(Object.keys(r.body).sort()).toEqual(KEY_FIELDS)
      expect(r.body).toMatchObject({
        id: k.id,
        name: 'updated',
        description: 'new text',
        expires_at: '2098-03-04T00:00:00Z',
        permission_set: 'mobile_app',
        user_id: alice.id,
      })
      const actions = await actionsFor('api_key_update', k.id)
      expect(actions).toHaveLength(1)
      expect(actions[0]).toMatchObject({
        user_id: alice.id,
        username: alice.username,
        ip: '127.0.0.1',
        interface: 'restapi',
      })

      const cleared = await call(s, 'PATCH', `/api_keys/${k.id}`, {
        session: adminSession,
        body: { expires_at: null },
      })
      expect(cleared.status).toBe(200)
      expect(cleared.body.expires_at).toBeNull()
      const adminAction = (await actionsFor('api_key_update', k.id))[1]
      expect(adminAction).toMatchObject({ username: ADMIN_USERNAME, interface: 'restapi' })

      expectError(
        await call(s, 'PATCH', `/api_keys/${k.id}`, { key: bobKey.key, body: { name: 'x' } }),
        403,
        'not-authorized/site-admin-required',
      )
      expectError(
        await call(s, 'PATCH', '/api_keys/987654', { key: aliceKey.key, body: { name: 'x' } }),
        404,
        'not-found/api-key-not-found',
      )
    })

    it('refuses bad PATCH input with exact types', async () => {
      const k = await makeKey(s, alice.id)
      const patch = (body: unknown) => call(s, 'PATCH', `/api_keys/${k.id}`, { key: aliceKey.key, body })
      expectError(await patch({ id: k.id + 1, name: 'x' }), 400, 'bad-request/request-params-invalid')
      expectError(await patch({ colour: 'red' }), 400, 'bad-request/request-params-invalid')
      expectError(await patch({ name: ['a', 'b'] }), 400, 'bad-request/request-params-invalid')
      expectError(await patch({ name: 'n'.repeat(256) }), 400, 'bad-request/request-params-invalid')
      expectError(await patch({ expires_at: 'soon' }), 400, 'bad-request/datetime-parse')
      const past = await patch({ expires_at: '2000-01-01' })
      expectError(past, 422, 'processing-failure/model-save-error')
      expect(Object.keys(past.body.model_errors)).toEqual(['expires_at'])
      const bad = await patch({ permission_set: 'root' })
      expectError(bad, 422, 'processing-failure/model-save-error')
      expect(Object.keys(bad.body.model_errors)).toEqual(['permission_set'])
      const both = await patch({ permission_set: 'root', expires_at: '2000-01-01' })
      expect(Object.keys(both.body.model_errors).sort()).toEqual(['expires_at', 'permission_set'])
      expectError(
        await call(s, 'PATCH', `/api_keys/${k.id}`, { key: aliceKey.key, raw: '{' }),
        400,
        'bad-request/invalid-body',
      )
      const siteKey = await makeKey(s, null)
      const siteWide = await call(s, 'PATCH', `/api_keys/${siteKey.id}`, {
        key: s.adminKey,
        body: { permission_set: 'sync_app' },
      })
      expectError(siteWide, 422, 'processing-failure/model-save-error')
      expect(Object.keys(siteWide.body.model_errors)).toEqual(['permission_set'])
      // Nothing was changed by the refused requests.
      expect((await keyRow(k.id))!.updated_at).toBe((await keyRow(k.id))!.created_at)
      expect(await actionsFor('api_key_update', k.id)).toHaveLength(0)
    })

    it('never changes the folder restriction of a key through PATCH', async () => {
      const k = await makeKey(s, alice.id, { path: 'docs' })
      const r = await call(s, 'PATCH', `/api_keys/${k.id}`, { key: aliceKey.key, body: { path: '' } })
      expect([200, 400]).toContain(r.status)
      expect((await keyRow(k.id))!.path).toBe('docs')
      const own = await call(s, 'PATCH', '/api_key', { key: k.key, body: { path: '' } })
      expectError(own, 400, 'bad-request/request-params-invalid')
      expect((await keyRow(k.id))!.path).toBe('docs')
    })

    it('takes back its read-only fields unchanged (SDK save), and refuses changed ones', async () => {
      const k = await makeKey(s, alice.id, { path: 'docs', name: 'echo' })
      const shown = (await call(s, 'GET', `/api_keys/${k.id}`, { key: aliceKey.key })).body
      const echoed = await call(s, 'PATCH', `/api_keys/${k.id}`, {
        key: aliceKey.key,
        body: { ...shown, key: k.key, name: 'echoed' },
      })
      expect(echoed.status).toBe(200)
      expect(echoed.body.name).toBe('echoed')
      for (const change of [
        { path: 'other' },
        { user_id: alice.id + 1000 },
        { url: 'http://x' },
        { key: 'f'.repeat(64) },
      ]) {
        expectError(
          await call(s, 'PATCH', `/api_keys/${k.id}`, { key: aliceKey.key, body: change }),
          400,
          'bad-request/request-params-invalid',
        )
      }
      expect((await keyRow(k.id))!.path).toBe('docs')
    })

    it('deletes a key, records api_key_destroy, and the key stops working', async () => {
      const k = await makeKey(s, alice.id)
      expectError(
        await call(s, 'DELETE', `/api_keys/${k.id}`, { key: bobKey.key }),
        403,
        'not-authorized/site-admin-required',
      )
      expectError(
        await call(s, 'DELETE', `/api_keys/${k.id}`, { key: aliceKey.key, body: { id: k.id + 1 } }),
        400,
        'bad-request/request-params-invalid',
      )
      const r = await call(s, 'DELETE', `/api_keys/${k.id}`, { key: aliceKey.key })
      expect(r.status).toBe(204)
      expect(r.text).toBe('')
      expect(await keyRow(k.id)).toBeUndefined()
      const actions = await actionsFor('api_key_destroy', k.id)
      expect(actions).toHaveLength(1)
      expect(actions[0]).toMatchObject({
        user_id: alice.id,
        username: alice.username,
        ip: '127.0.0.1',
        interface: 'restapi',
      })
      expectError(
        await call(s, 'GET', '/api_key', { key: k.key }),
        401,
        'not-authenticated/authentication-required',
      )
      expectError(
        await call(s, 'DELETE', `/api_keys/${k.id}`, { key: aliceKey.key }),
        404,
        'not-found/api-key-not-found',
      )

      const other = await makeKey(s, bob.id)
      const byAdmin = await call(s, 'DELETE', `/api_keys/${other.id}`, {
        key: s.adminKey,
        body: { id: other.id },
      })
      expect(byAdmin.status).toBe(204)
    })
  })

  describe('GET, PATCH and DELETE /api_key', () => {
    it('shows, updates and deletes the key of the request', async () => {
      const k = await makeKey(s, alice.id, { name: 'current' })
      const got = await call(s, 'GET', '/api_key', { key: k.key })
      expect(got.status).toBe(200)
      expect(got.body).toMatchObject({ id: k.id, name: 'current', user_id: alice.id })

      const patched = await call(s, 'PATCH', '/api_key', {
        key: k.key,
        body: { name: 'renamed', expires_at: '2097-01-01T12:00:00-01:00' },
      })
      expect(patched.status).toBe(200)
      expect(Object.keys(patched.body).sort()).toEqual(KEY_FIELDS)
      expect(patched.body).toMatchObject({ id: k.id, name: 'renamed', expires_at: '2097-01-01T13:00:00Z' })
      expect(await actionsFor('api_key_update', k.id)).toHaveLength(1)
      expectError(
        await call(s, 'PATCH', '/api_key', { key: k.key, body: { description: 'x' } }),
        400,
        'bad-request/request-params-invalid',
      )
      expectError(
        await call(s, 'PATCH', '/api_key', { key: k.key, body: { expires_at: '2000-01-01' } }),
        422,
        'processing-failure/model-save-error',
      )

      const full = await call(s, 'PATCH', '/api_key', { key: k.key, body: { permission_set: 'desktop_app' } })
      expect(full.status).toBe(200)
      expect(full.body.permission_set).toBe('desktop_app')

      const del = await call(s, 'DELETE', '/api_key', { key: k.key })
      expect(del.status).toBe(204)
      expect(del.text).toBe('')
      const destroyed = await actionsFor('api_key_destroy', k.id)
      expect(destroyed).toHaveLength(1)
      expect(destroyed[0]).toMatchObject({
        user_id: alice.id,
        username: alice.username,
        interface: 'restapi',
      })
      expectError(
        await call(s, 'GET', '/api_key', { key: k.key }),
        401,
        'not-authenticated/authentication-required',
      )
    })

    it('answers 403 must-authenticate-with-api-key to sessions', async () => {
      const session = await login(s, alice.username, alice.password)
      for (const [method, body] of [['GET'], ['PATCH', { name: 'x' }], ['DELETE']] as const) {
        const r = await call(s, method, '/api_key', { session, ...(body ? { body } : {}) })
        expectError(r, 403, 'not-authorized/must-authenticate-with-api-key')
      }
    })

    it('does not let a key that is not full change its own permission set', async () => {
      const k = await makeKey(s, alice.id, { permission_set: 'desktop_app' })
      const r = await call(s, 'PATCH', '/api_key', { key: k.key, body: { permission_set: 'full' } })
      expectError(r, 403, 'not-authorized/insufficient-permission-for-params')
      expect((await keyRow(k.id))!.permission_set).toBe('desktop_app')
      const same = await call(s, 'PATCH', '/api_key', {
        key: k.key,
        body: { permission_set: 'desktop_app', name: 'kept' },
      })
      expect(same.status).toBe(200)
      expect(same.body).toMatchObject({ permission_set: 'desktop_app', name: 'kept' })
    })

    it('refuses a site-wide key becoming anything but full', async () => {
      const k = await makeKey(s, null)
      const r = await call(s, 'PATCH', '/api_key', { key: k.key, body: { permission_set: 'none' } })
      expectError(r, 422, 'processing-failure/model-save-error')
      expect(Object.keys(r.body.model_errors)).toEqual(['permission_set'])
    })
  })

  describe('permission sets and folder restriction', () => {
    const ONLY_FOR: [string, string][] = [
      ['desktop_app', 'not-authorized/api-key-only-for-desktop-app'],
      ['sync_app', 'not-authorized/api-key-only-for-desktop-app'],
      ['mobile_app', 'not-authorized/api-key-only-for-mobile-app'],
      ['office_integration', 'not-authorized/api-key-only-for-office-integration'],
    ]
    it.each(ONLY_FOR)('keeps a %s key off /api_keys but lets it read itself', async (set, type) => {
      const k = await makeKey(s, alice.id, { permission_set: set })
      expectError(await call(s, 'GET', '/api_keys', { key: k.key }), 403, type)
      expectError(await call(s, 'POST', '/api_keys', { key: k.key, body: {} }), 403, type)
      expectError(await call(s, 'GET', `/api_keys/${k.id}`, { key: k.key }), 403, type)
      expectError(await call(s, 'DELETE', `/api_keys/${k.id}`, { key: k.key }), 403, type)
      const me = await call(s, 'GET', '/api_key', { key: k.key })
      expect(me.status).toBe(200)
      expect(me.body.permission_set).toBe(set)
    })

    it('lets a key with permission set none reach only GET /api_key', async () => {
      const k = await makeKey(s, alice.id, { permission_set: 'none' })
      const me = await call(s, 'GET', '/api_key', { key: k.key })
      expect(me.status).toBe(200)
      expect(me.body.permission_set).toBe('none')
      const full = 'not-authorized/full-permission-required'
      expectError(await call(s, 'PATCH', '/api_key', { key: k.key, body: { name: 'x' } }), 403, full)
      expectError(await call(s, 'DELETE', '/api_key', { key: k.key }), 403, full)
      expectError(await call(s, 'GET', '/api_keys', { key: k.key }), 403, full)
      expectError(await call(s, 'POST', '/api_keys', { key: k.key, body: {} }), 403, full)
      expectError(await call(s, 'GET', `/api_keys/${k.id}`, { key: k.key }), 403, full)
      expect(await keyRow(k.id)).toBeDefined()
    })

    it('keeps a path-restricted key off /api_keys but lets it read itself', async () => {
      const k = await makeKey(s, alice.id, { path: 'projects/x' })
      const type = 'not-authorized/api-key-is-path-restricted'
      expectError(await call(s, 'GET', '/api_keys', { key: k.key }), 403, type)
      expectError(await call(s, 'POST', '/api_keys', { key: k.key, body: {} }), 403, type)
      expectError(await call(s, 'PATCH', `/api_keys/${k.id}`, { key: k.key, body: { name: 'x' } }), 403, type)
      const me = await call(s, 'GET', '/api_key', { key: k.key })
      expect(me.status).toBe(200)
      expect(me.body.path).toBe('projects/x')
    })
  })

  describe('Shared/Bot users', () => {
    it('refuses list and by-id endpoints but allows POST /api_keys and GET /api_key', async () => {
      const bot = await makeUser(s, { self_managed: false })
      const botKey = await makeKey(s, bot.id)
      const session = await login(s, bot.username, bot.password)
      const type = 'not-authorized/self-managed-required'
      for (const cred of [{ key: botKey.key }, { session }]) {
        expectError(await call(s, 'GET', '/api_keys', cred), 403, type)
        expectError(await call(s, 'GET', `/api_keys/${botKey.id}`, cred), 403, type)
        expectError(
          await call(s, 'PATCH', `/api_keys/${botKey.id}`, { ...cred, body: { name: 'x' } }),
          403,
          type,
        )
        expectError(await call(s, 'DELETE', `/api_keys/${botKey.id}`, cred), 403, type)
        const created = await call(s, 'POST', '/api_keys', { ...cred, body: { name: 'bot key' } })
        expect(created.status).toBe(201)
        expect(created.body.user_id).toBe(bot.id)
      }
      const me = await call(s, 'GET', '/api_key', { key: botKey.key })
      expect(me.status).toBe(200)
      expect(me.body.id).toBe(botKey.id)
      expect(await keyRow(botKey.id)).toMatchObject({ name: null })
      const renamed = await call(s, 'PATCH', '/api_key', { key: botKey.key, body: { name: 'bot renamed' } })
      expect(renamed.status).toBe(200)
      expect(renamed.body.name).toBe('bot renamed')
      expect((await call(s, 'DELETE', '/api_key', { key: botKey.key })).status).toBe(204)
      expect(await keyRow(botKey.id)).toBeUndefined()
    })
  })

  describe('credentials', () => {
    it('accepts every credential header', async () => {
      const session = await login(s, alice.username, alice.password)
      const variants: Record<string, string>[] = [
        { 'X-ServiceAPI-Key': aliceKey.key },
        { 'x-filesapi-key': aliceKey.key },
        { 'X-ServiceAPI-Key': aliceKey.key.toUpperCase() },
        basic(aliceKey.key, 'anything'),
        basic(aliceKey.key, ''),
        { Authorization: `Basic ${Buffer.from(aliceKey.key).toString('base64')}` },
        { 'X-ServiceAPI-Auth': session },
        { 'X-FilesAPI-Auth': session },
      ]
      for (const headers of variants) {
        const r = await call(s, 'GET', `/api_keys/${aliceKey.id}`, { headers })
        expect({ headers, status: r.status }).toEqual({ headers, status: 200 })
      }
    })

    it('answers 401 authentication-required for missing, malformed or unknown credentials', async () => {
      const bogus = crypto.randomBytes(32).toString('hex')
      const variants: Record<string, string>[] = [
        {},
        { 'X-ServiceAPI-Key': bogus },
        { 'X-ServiceAPI-Key': 'short' },
        basic(bogus, 'x'),
        basic('', aliceKey.key),
        { 'X-ServiceAPI-Auth': 'not-a-session' },
        { 'X-FilesAPI-Auth': bogus },
      ]
      for (const headers of variants) {
        const r = await call(s, 'GET', '/api_keys', { headers })
        expect({ headers, status: r.status, type: r.body.type }).toEqual({
          headers,
          status: 401,
          type: 'not-authenticated/authentication-required',
        })
      }
    })

    it('answers 401 to an expired key', async () => {
      const k = await makeKey(s, alice.id, { expires_at: '2099-01-01' })
      expect((await call(s, 'GET', '/api_key', { key: k.key })).status).toBe(200)
      await s.container.db
        .updateTable('api_keys')
        .set({ expires_at: Date.now() - 1000 })
        .where('id', '=', k.id)
        .execute()
      expectError(
        await call(s, 'GET', '/api_key', { key: k.key }),
        401,
        'not-authenticated/authentication-required',
      )
      expectError(
        await call(s, 'GET', '/api_keys', { key: k.key }),
        401,
        'not-authenticated/authentication-required',
      )
    })

    it('answers 401 to a key of a disabled user', async () => {
      const u = await makeUser(s)
      const k = await makeKey(s, u.id)
      expect((await call(s, 'GET', '/api_key', { key: k.key })).status).toBe(200)
      await s.container.db.updateTable('users').set({ disabled: 1 }).where('id', '=', u.id).execute()
      expectError(
        await call(s, 'GET', '/api_key', { key: k.key }),
        401,
        'not-authenticated/authentication-required',
      )
    })

    it('writes last_use_at at most once per 3 hours', async () => {
      const k = await makeKey(s, alice.id)
      expect((await keyRow(k.id))!.last_use_at).toBeNull()
      const first = await call(s, 'GET', '/api_key', { key: k.key })
      expect(first.body.last_use_at).toMatch(ISO_Z)
      const written = (await keyRow(k.id))!.last_use_at!
      expect(written).not.toBeNull()
      // Pin the stored value to a known second so a rewrite would be visible.
      await s.container.db
        .updateTable('api_keys')
        .set({ last_use_at: written - 2 * HOUR })
        .where('id', '=', k.id)
        .execute()
      const second = await call(s, 'GET', '/api_key', { key: k.key })
      expect(second.status).toBe(200)
      expect((await keyRow(k.id))!.last_use_at).toBe(written - 2 * HOUR)
      expect(second.body.last_use_at).toBe(
        new Date(Math.floor((written - 2 * HOUR) / 1000) * 1000).toISOString().replace('.000Z', 'Z'),
      )

      await s.container.db
        .updateTable('api_keys')
        .set({ last_use_at: written - 4 * HOUR })
        .where('id', '=', k.id)
        .execute()
      const before = Date.now()
      const third = await call(s, 'GET', `/api_keys/${k.id}`, { key: k.key })
      expect(third.status).toBe(200)
      const rewritten = (await keyRow(k.id))!.last_use_at!
      expect(rewritten).toBeGreaterThanOrEqual(before)
      expect(Date.parse(third.body.last_use_at)).toBe(Math.floor(rewritten / 1000) * 1000)
    })
  })
})
