import { beforeAll, describe, expect, it } from 'vitest'
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  adminUserId,
  call,
  dialects,
  login,
  makeKey,
  makeUser,
  type TestUser,
  useServer,
} from './helpers/server.js'

const REAUTH = 'X-Service-Reauthentication'

describe.each(dialects)('users (%s)', (dialect) => {
  let adminId: number
  let regular: TestUser
  let regularKey: string

  const s = useServer(dialect)
  beforeAll(async () => {
    adminId = await adminUserId(s)
    regular = await makeUser(s, { username: 'regular-user' })
    regularKey = (await makeKey(s, regular.id)).key
  })

  const lastAction = (action: string) =>
    s.container.db
      .selectFrom('actions')
      .selectAll()
      .where('action', '=', action)
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow()

  describe('POST /users', () => {
    it('creates a user and records user_create with the caller', async () => {
      const r = await call(s, 'POST', '/users', {
        key: s.adminKey,
        body: {
          username: 'Created.One',
          password: 'a-good-password',
          name: 'Created One',
          email: 'one@example.com',
        },
      })
      expect(r.status).toBe(201)
      expect(Object.keys(r.body).sort()).toEqual(
        [
          'active_2fa',
          'allowed_ips',
          'attachments_permission',
          'authenticate_until',
          'billing_permission',
          'bundle_permission',
          'created_at',
          'dav_permission',
          'days_remaining_until_password_expire',
          'ftp_permission',
          'restapi_permission',
          'sftp_permission',
          'disabled',
          'email',
          'id',
          'last_login_at',
          'name',
          'password_expire_at',
          'password_expired',
          'password_set_at',
          'password_set_time',
          'password_validity_days',
          'readonly_site_admin',
          'require_2fa',
          'require_password_change',
          'self_managed',
          'site_admin',
          'type_of_2fa',
          'username',
        ].sort(),
      )
      expect(r.body).toMatchObject({
        username: 'Created.One',
        name: 'Created One',
        email: 'one@example.com',
        site_admin: false,
        self_managed: true,
        disabled: false,
        last_login_at: null,
      })
      expect(r.body.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/)
      expect(r.body.password_set_time).toMatch(/Z$/)
      expect(r.text).not.toContain('a-good-password')
      expect(r.text).not.toContain('scrypt')

      const row = await s.container.db
        .selectFrom('users')
        .selectAll()
        .where('id', '=', r.body.id)
        .executeTakeFirstOrThrow()
      expect(row.password_hash).toMatch(/^scrypt\$/)
      expect(row.username_lower).toBe('created.one')
      // The new password logs in.
      await login(s, 'created.one', 'a-good-password')

      const a = await lastAction('user_create')
      expect(a.user_id).toBeNull()
      expect(a.username).toBeNull()
      expect(a.ip).toBe('127.0.0.1')
      expect(a.interface).toBe('restapi')
      expect(JSON.parse(a.targets)).toEqual([{ type: 'user', id: r.body.id, name: 'Created.One' }])
    })

    it('records the acting site admin when created through a session', async () => {
      const session = await login(s, ADMIN_USERNAME, ADMIN_PASSWORD)
      const r = await call(s, 'POST', '/users', {
        session,
        body: { username: 'bot-one', self_managed: false, site_admin: false },
      })
      expect(r.status).toBe(201)
      expect(r.body.self_managed).toBe(false)
      expect(r.body.password_set_time).toBeNull()
      const a = await lastAction('user_create')
      expect(a.user_id).toBe(adminId)
      expect(a.username).toBe(ADMIN_USERNAME)
      expect(a.interface).toBe('restapi')
      expect(a.display).toContain('bot-one')
    })

    it('answers in XML with the user root', async () => {
      const r = await call(s, 'POST', '/users.xml', {
        key: s.adminKey,
        raw: '<user><username>xml-made</username><site_admin type="boolean">true</site_admin></user>',
        contentType: 'application/xml',
      })
      expect(r.status).toBe(201)
      expect(r.text).toContain('<user>')
      expect(r.text).toContain('<username>xml-made</username>')
      expect(r.text).toContain('<site_admin type="boolean">true</site_admin>')
      expect(r.text).toContain('<name nil="true"/>')
    })

    it('refuses a user who is not a site admin', async () => {
      const r = await call(s, 'POST', '/users', { key: regularKey, body: { username: 'nope-1' } })
      expect(r.status).toBe(403)
      expect(r.body.type).toBe('not-authorized/site-admin-required')
    })

    it('refuses a Shared/Bot user', async () => {
      const bot = await makeUser(s, { self_managed: false })
      const r = await call(s, 'POST', '/users', {
        key: (await makeKey(s, bot.id)).key,
        body: { username: 'nope-2' },
      })
      expect(r.status).toBe(403)
      expect(r.body.type).toBe('not-authorized/site-admin-required')
    })

    it('refuses a request without credentials', async () => {
      const r = await call(s, 'POST', '/users', { body: { username: 'nope-3' } })
      expect(r.status).toBe(401)
      expect(r.body.type).toBe('not-authenticated/authentication-required')
    })

    it('refuses keys that are not full or are path-restricted', async () => {
      const desktop = await makeKey(s, adminId, { permission_set: 'desktop_app' })
      let r = await call(s, 'POST', '/users', { key: desktop.key, body: { username: 'nope-4' } })
      expect(r.status).toBe(403)
      expect(r.body.type).toBe('not-authorized/api-key-only-for-desktop-app')
      const restricted = await makeKey(s, adminId, { path: 'somewhere' })
      r = await call(s, 'POST', '/users', { key: restricted.key, body: { username: 'nope-4' } })
      expect(r.status).toBe(403)
      expect(r.body.type).toBe('not-authorized/api-key-is-path-restricted')
    })

    it.each([
      ['a missing username', { password: 'long-enough' }, 'bad-request/request-params-required'],
      [
        'an unknown field',
        { username: 'x1', favourite_colour: 'blue' },
        'bad-request/request-params-invalid',
      ],
      [
        'a wrongly typed boolean',
        { username: 'x2', site_admin: 'perhaps' },
        'bad-request/request-params-invalid',
      ],
      [
        'an object for a string',
        { username: 'x3', name: { first: 'a' } },
        'bad-request/request-params-invalid',
      ],
      [
        'a 10,000-character name',
        { username: 'x4', name: 'n'.repeat(10_000) },
        'bad-request/request-params-invalid',
      ],
      ['a 129-character username', { username: 'u'.repeat(129) }, 'bad-request/request-params-invalid'],
      ['a group of users', [{ username: 'x5' }], 'bad-request/invalid-body'],
    ])('refuses %s with 400', async (_what, body, type) => {
      const r = await call(s, 'POST', '/users', { key: s.adminKey, body })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe(type)
    })

    it('refuses malformed JSON and XML', async () => {
      let r = await call(s, 'POST', '/users', {
        key: s.adminKey,
        raw: '{"username": "x6",',
        contentType: 'application/json',
      })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/invalid-body')
      r = await call(s, 'POST', '/users', {
        key: s.adminKey,
        raw: '<user><username>x6</user>',
        contentType: 'application/xml',
      })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/invalid-body')
    })

    it.each([
      ['a short password', { username: 'm1', password: 'short' }, 'password'],
      [
        'a mismatched confirmation',
        { username: 'm2', password: 'long-enough-1', password_confirmation: 'other-one-1' },
        'password_confirmation',
      ],
      ['a username with a space', { username: 'has space' }, 'username'],
      ['a username with a slash', { username: 'a/b' }, 'username'],
      ['an empty username', { username: '' }, 'username'],
      ['an e-mail without @', { username: 'm3', email: 'not-an-address' }, 'email'],
      ['an e-mail without a domain dot', { username: 'm4', email: 'a@localhost' }, 'email'],
    ])('refuses %s with 422 on that field', async (_what, body, field) => {
      const r = await call(s, 'POST', '/users', { key: s.adminKey, body })
      expect(r.status).toBe(422)
      expect(r.body.type).toBe('processing-failure/model-save-error')
      expect(Object.keys(r.body.model_errors)).toEqual([field])
    })

    it('refuses a username taken in another letter case', async () => {
      const r = await call(s, 'POST', '/users', { key: s.adminKey, body: { username: 'REGULAR-USER' } })
      expect(r.status).toBe(422)
      expect(r.body.type).toBe('processing-failure/model-save-error')
      expect(r.body.model_errors).toEqual({ username: ['has already been taken'] })
    })

    it('turns a race on the unique index into the same 422', async () => {
      // Concurrent creations all pass the friendly pre-check while their passwords hash; the index decides.
      const results = await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          call(s, 'POST', '/users', {
            key: s.adminKey,
            body: { username: i % 2 ? 'Racer' : 'racer', password: 'racing-password' },
          }),
        ),
      )
      expect(results.map((r) => r.status).sort()).toEqual([201, 422, 422, 422])
      for (const r of results.filter((x) => x.status === 422)) {
        expect(r.body.type).toBe('processing-failure/model-save-error')
        expect(r.body.model_errors).toEqual({ username: ['has already been taken'] })
      }
    })
  })

  describe('GET /user', () => {
    it("shows a key's owner and a session's user their own record", async () => {
      const byKey = await call(s, 'GET', '/user', { key: regularKey })
      expect(byKey.status).toBe(200)
      expect(byKey.body).toMatchObject({ id: regular.id, username: 'regular-user', site_admin: false })
      const session = await login(s, ADMIN_USERNAME, ADMIN_PASSWORD)
      const bySession = await call(s, 'GET', '/user', { session })
      expect(bySession.status).toBe(200)
      expect(bySession.body).toMatchObject({ id: adminId, username: ADMIN_USERNAME, site_admin: true })
    })

    it('answers 404 for a site-wide key, which has no user, and 401 without credentials', async () => {
      const r = await call(s, 'GET', '/user', { key: s.adminKey })
      expect(r.status).toBe(404)
      expect(r.body.type).toBe('not-found')
      const anon = await call(s, 'GET', '/user')
      expect(anon.status).toBe(401)
    })
  })

  describe('GET /users', () => {
    const listed = useServer(dialect)
    beforeAll(async () => {
      for (const [username, email, site_admin] of [
        ['carol', 'carol@example.com', false],
        ['Dave', 'dave@example.org', true],
        ['erin', null, false],
        ['frank', 'frank@example.com', false],
        ['grace', 'grace@example.net', false],
      ] as const) {
        await makeUser(listed, { username, site_admin, ...(email ? { email } : {}) })
      }
    })

    const pages = async (query: string, key = listed.adminKey) => {
      const all: any[][] = []
      let cursor: string | null = null
      do {
        const r = await call(
          listed,
          'GET',
          `/users?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          { key },
        )
        expect(r.status).toBe(200)
        all.push(r.body)
        cursor = r.headers.get('X-Service-Cursor-Next')
        if (cursor) expect(r.headers.get('X-Files-Cursor-Next')).toBe(cursor)
      } while (cursor && all.length < 20)
      return all
    }

    it('pages through every user, two at a time', async () => {
      const all = await pages('per_page=2')
      expect(all.map((p) => p.length)).toEqual([2, 2, 2])
      expect(all.flat().map((u) => u.username)).toEqual(['admin', 'carol', 'Dave', 'erin', 'frank', 'grace'])
    })

    it('sorts by username case-insensitively, descending, across pages', async () => {
      const all = await pages('per_page=2&sort_by[username]=desc')
      expect(all.flat().map((u) => u.username)).toEqual(['grace', 'frank', 'erin', 'Dave', 'carol', 'admin'])
    })

    it('sorts by e-mail with missing addresses first', async () => {
      const all = await pages('per_page=4&sort_by[email]=asc')
      expect(all.flat().map((u) => u.username)).toEqual(['admin', 'erin', 'carol', 'Dave', 'frank', 'grace'])
    })

    it('filters by site_admin and by a username pattern', async () => {
      let r = await call(listed, 'GET', '/users?filter[site_admin]=true', { key: listed.adminKey })
      expect(r.body.map((u: any) => u.username)).toEqual(['admin', 'Dave'])
      r = await call(listed, 'GET', '/users?filter_like[email]=%25example.com', { key: listed.adminKey })
      expect(r.body.map((u: any) => u.username)).toEqual(['carol', 'frank'])
      r = await call(listed, 'GET', '/users?filter[username]=DAVE', { key: listed.adminKey })
      expect(r.body.map((u: any) => u.username)).toEqual(['Dave'])
    })

    it('refuses an unknown sort or filter field and a bad per_page', async () => {
      let r = await call(listed, 'GET', '/users?sort_by[password]=asc', { key: listed.adminKey })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/invalid-filter-field')
      r = await call(listed, 'GET', '/users?per_page=0', { key: listed.adminKey })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/request-params-invalid')
      r = await call(listed, 'GET', '/users?search=x', { key: listed.adminKey })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/request-params-invalid')
    })

    it('shows anyone who is not a site admin only themselves', async () => {
      const u = await makeUser(listed, { username: 'henry' })
      const all = await pages('per_page=1', (await makeKey(listed, u.id)).key)
      expect(all.flat().map((x) => x.username)).toEqual(['henry'])
    })

    it('answers the list in XML', async () => {
      const r = await call(listed, 'GET', '/users.xml?per_page=2', { key: listed.adminKey })
      expect(r.status).toBe(200)
      expect(r.text).toContain('<users type="array">')
      expect(r.text).toContain('<user>')
      expect(r.text).toContain('<id type="integer">')
      expect(r.text).not.toContain('password_hash')
    })

    it('refuses a list without credentials', async () => {
      const r = await call(listed, 'GET', '/users')
      expect(r.status).toBe(401)
      expect(r.body.type).toBe('not-authenticated/authentication-required')
    })
  })

  describe('GET /users/{id}', () => {
    it('shows a user to a site admin, in JSON and XML', async () => {
      let r = await call(s, 'GET', `/users/${regular.id}`, { key: s.adminKey })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ id: regular.id, username: 'regular-user', site_admin: false })
      r = await call(s, 'GET', `/users/${regular.id}`, { key: s.adminKey, accept: 'application/xml' })
      expect(r.status).toBe(200)
      expect(r.text).toContain(`<user>\n  <id type="integer">${regular.id}</id>`)
    })

    it('shows users themselves', async () => {
      const r = await call(s, 'GET', `/users/${regular.id}`, { key: regularKey })
      expect(r.status).toBe(200)
      expect(r.body.username).toBe('regular-user')
    })

    it('refuses another user to someone who is not a site admin, whether or not it exists', async () => {
      for (const id of [adminId, 999_999]) {
        const r = await call(s, 'GET', `/users/${id}`, { key: regularKey })
        expect(r.status).toBe(403)
        expect(r.body.type).toBe('not-authorized/site-admin-required')
      }
    })

    it('answers 404 for an unknown id and 400 for a malformed one', async () => {
      let r = await call(s, 'GET', '/users/999999', { key: s.adminKey })
      expect(r.status).toBe(404)
      expect(r.body.type).toBe('not-found/user-not-found')
      r = await call(s, 'GET', '/users/abc', { key: s.adminKey })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/request-params-invalid')
    })
  })

  describe('PATCH /users/{id}', () => {
    it('lets a site admin change any field, and records only the field names', async () => {
      const u = await makeUser(s)
      const r = await call(s, 'PATCH', `/users/${u.id}`, {
        key: s.adminKey,
        body: {
          id: u.id,
          name: 'Secret Name',
          email: 'secret@example.com',
          site_admin: true,
          self_managed: false,
        },
      })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({
        name: 'Secret Name',
        email: 'secret@example.com',
        site_admin: true,
        self_managed: false,
      })
      const a = await lastAction('user_update')
      expect(a.display).toBe(`Updated user ${u.username} (name, email, site_admin, self_managed)`)
      expect(a.display).not.toContain('Secret')
      expect(a.user_id).toBeNull()
      expect(a.interface).toBe('restapi')
      expect(JSON.parse(a.targets)).toEqual([{ type: 'user', id: u.id, name: u.username }])
    })

    it('renames a user, refusing a name taken in another case', async () => {
      const u = await makeUser(s)
      let r = await call(s, 'PATCH', `/users/${u.id}`, {
        key: s.adminKey,
        body: { username: 'Regular-User' },
      })
      expect(r.status).toBe(422)
      expect(r.body.model_errors).toEqual({ username: ['has already been taken'] })
      r = await call(s, 'PATCH', `/users/${u.id}`, {
        key: s.adminKey,
        body: { username: `${u.username}-Renamed` },
      })
      expect(r.status).toBe(200)
      expect(r.body.username).toBe(`${u.username}-Renamed`)
      // Changing only the letter case of one's own name is not a clash.
      r = await call(s, 'PATCH', `/users/${u.id}`, {
        key: s.adminKey,
        body: { username: `${u.username}-renamed`.toUpperCase() },
      })
      expect(r.status).toBe(200)
    })

    it('lets users change their own name and e-mail', async () => {
      const r = await call(s, 'PATCH', `/users/${regular.id}.json`, {
        key: regularKey,
        body: { name: 'Regular', email: 'reg@example.com' },
      })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ name: 'Regular', email: 'reg@example.com' })
      const a = await lastAction('user_update')
      expect(a.user_id).toBe(regular.id)
      expect(a.username).toBe('regular-user')
    })

    it.each([
      ['site_admin', { site_admin: true }],
      ['username', { username: 'self-renamed' }],
      ['self_managed', { self_managed: false }],
      ['disabled', { disabled: true }],
    ])('refuses users changing their own %s', async (_f, body) => {
      const r = await call(s, 'PATCH', `/users/${regular.id}`, { key: regularKey, body })
      expect(r.status).toBe(403)
      expect(r.body.type).toBe('not-authorized/site-admin-required')
    })

    it('refuses a user who is not a site admin changing someone else', async () => {
      const r = await call(s, 'PATCH', `/users/${adminId}`, { key: regularKey, body: { name: 'pwned' } })
      expect(r.status).toBe(403)
      expect(r.body.type).toBe('not-authorized/site-admin-required')
    })

    it('refuses a Shared/Bot user changing its own password', async () => {
      const bot = await makeUser(s, { self_managed: false })
      const r = await call(s, 'PATCH', `/users/${bot.id}`, {
        key: (await makeKey(s, bot.id)).key,
        body: { password: 'new-password-1' },
      })
      expect(r.status).toBe(403)
      expect(r.body.type).toBe('not-authorized/self-managed-required')
    })

    it('refuses site admins removing their own admin rights or disabling themselves', async () => {
      const adminKey = (await makeKey(s, adminId)).key
      for (const body of [{ site_admin: false }, { disabled: true }]) {
        const r = await call(s, 'PATCH', `/users/${adminId}`, { key: adminKey, body })
        expect(r.status).toBe(422)
        expect(r.body.type).toBe('processing-failure/model-save-error')
      }
    })

    it('refuses bad input', async () => {
      let r = await call(s, 'PATCH', `/users/${regular.id}`, {
        key: s.adminKey,
        body: { id: regular.id + 1, name: 'x' },
      })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/request-params-invalid')
      r = await call(s, 'PATCH', `/users/${regular.id}`, {
        key: s.adminKey,
        body: { password_set_time: '2020-01-01' },
      })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/request-params-invalid')
      r = await call(s, 'PATCH', `/users/${regular.id}`, { key: s.adminKey, body: { disabled: 'sometimes' } })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/request-params-invalid')
      r = await call(s, 'PATCH', `/users/${regular.id}`, {
        key: s.adminKey,
        body: { email: 'e'.repeat(300) },
      })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/request-params-invalid')
      r = await call(s, 'PATCH', `/users/${regular.id}`, {
        key: s.adminKey,
        raw: '{"name":',
        contentType: 'application/json',
      })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/invalid-body')
      r = await call(s, 'PATCH', `/users/${regular.id}`, { key: s.adminKey, body: { password: '1234567' } })
      expect(r.status).toBe(422)
      expect(r.body.model_errors).toEqual({ password: ['is too short (minimum is 8 characters)'] })
      r = await call(s, 'PATCH', '/users/999999', { key: s.adminKey, body: { name: 'ghost' } })
      expect(r.status).toBe(404)
      expect(r.body.type).toBe('not-found/user-not-found')
    })

    it('refuses control characters and bidirectional overrides in a name, on create and update', async () => {
      const INVALID = 'bad-request/request-params-contain-invalid-character'
      const before = await call(s, 'GET', `/users/${regular.id}`, { key: s.adminKey })
      for (const name of ['Eve\u202Eevil', 'a\u2066b', 'tab\there', 'two\nlines', 'bell\u0007', 'c1\u0090']) {
        const created = await call(s, 'POST', '/users', {
          key: s.adminKey,
          body: { username: 'ctl-user', name },
        })
        expect({ status: created.status, type: created.body.type }).toEqual({ status: 400, type: INVALID })
        const updated = await call(s, 'PATCH', `/users/${regular.id}`, { key: s.adminKey, body: { name } })
        expect({ status: updated.status, type: updated.body.type }).toEqual({ status: 400, type: INVALID })
      }
      const xml = await call(s, 'PATCH', `/users/${regular.id}`, {
        key: s.adminKey,
        raw: '<user><name>Eve&#8238;evil</name></user>',
        contentType: 'application/xml',
      })
      expect({ status: xml.status, type: xml.body.type }).toEqual({ status: 400, type: INVALID })
      const query = await call(s, 'PATCH', `/users/${regular.id}?name=Eve%E2%80%AEevil`, { key: s.adminKey })
      expect({ status: query.status, type: query.body.type }).toEqual({ status: 400, type: INVALID })
      const created = await s.container.db
        .selectFrom('users')
        .select('id')
        .where('username', '=', 'ctl-user')
        .execute()
      expect(created).toEqual([])
      const after = await call(s, 'GET', `/users/${regular.id}`, { key: s.adminKey })
      expect(after.body.name).toBe(before.body.name)
      // Right-to-left names and their implicit marks are names like any other.
      const rtl = await call(s, 'POST', '/users', {
        key: s.adminKey,
        body: { username: 'rtl-user', name: 'محمد\u200f (2)' },
      })
      expect(rtl.status).toBe(201)
      expect(rtl.body.name).toBe('محمد\u200f (2)')
    })

    it('changes a password with an API key without reauthentication, ending that user’s sessions', async () => {
      const u = await makeUser(s)
      const session = await login(s, u.username, u.password)
      const before = Date.now()
      const r = await call(s, 'PATCH', `/users/${u.id}`, {
        key: s.adminKey,
        body: { password: 'brand-new-password' },
      })
      expect(r.status).toBe(200)
      expect(Date.parse(r.body.password_set_time)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000)
      const gone = await call(s, 'GET', `/users/${u.id}`, { session })
      expect(gone.status).toBe(401)
      expect(gone.body.type).toBe('not-authenticated/authentication-required')
      await login(s, u.username, 'brand-new-password')
      expect((await lastAction('user_update')).display).toBe(`Updated user ${u.username} (password)`)
    })

    it('does nothing and records nothing when nothing changes', async () => {
      const u = await makeUser(s)
      const count = async () =>
        (
          await s.container.db
            .selectFrom('actions')
            .select('id')
            .where('action', '=', 'user_update')
            .execute()
        ).length
      const n = await count()
      const r = await call(s, 'PATCH', `/users/${u.id}`, {
        key: s.adminKey,
        body: { site_admin: false, id: u.id },
      })
      expect(r.status).toBe(200)
      expect(await count()).toBe(n)
    })
  })

  describe('DELETE /users/{id}', () => {
    it('deletes a user with their keys and sessions, and records user_destroy', async () => {
      const u = await makeUser(s)
      const key = (await makeKey(s, u.id)).key
      const session = await login(s, u.username, u.password)
      const r = await call(s, 'DELETE', `/users/${u.id}`, { key: s.adminKey, body: { id: u.id } })
      expect(r.status).toBe(204)
      expect(r.text).toBe('')
      expect((await call(s, 'GET', `/users/${u.id}`, { key: s.adminKey })).status).toBe(404)
      expect((await call(s, 'GET', '/users', { key })).status).toBe(401)
      expect((await call(s, 'GET', '/users', { session })).status).toBe(401)
      const a = await lastAction('user_destroy')
      expect(a.user_id).toBeNull()
      expect(a.ip).toBe('127.0.0.1')
      expect(a.interface).toBe('restapi')
      expect(JSON.parse(a.targets)).toEqual([{ type: 'user', id: u.id, name: u.username }])
    })

    it('refuses users who are not site admins, bots included', async () => {
      const bot = await makeUser(s, { self_managed: false })
      for (const key of [regularKey, (await makeKey(s, bot.id)).key]) {
        const r = await call(s, 'DELETE', `/users/${adminId}`, { key })
        expect(r.status).toBe(403)
        expect(r.body.type).toBe('not-authorized/site-admin-required')
      }
    })

    it('refuses deleting yourself', async () => {
      const r = await call(s, 'DELETE', `/users/${adminId}`, { key: (await makeKey(s, adminId)).key })
      expect(r.status).toBe(422)
      expect(r.body.type).toBe('processing-failure/model-save-error')
      expect((await call(s, 'GET', `/users/${adminId}`, { key: s.adminKey })).status).toBe(200)
    })

    it('answers 404 for an unknown user and 401 without credentials', async () => {
      let r = await call(s, 'DELETE', '/users/999999', { key: s.adminKey })
      expect(r.status).toBe(404)
      expect(r.body.type).toBe('not-found/user-not-found')
      r = await call(s, 'DELETE', `/users/${regular.id}`)
      expect(r.status).toBe(401)
      expect(r.body.type).toBe('not-authenticated/authentication-required')
    })
  })

  describe('reauthentication through a session', () => {
    const adminSession = () => login(s, ADMIN_USERNAME, ADMIN_PASSWORD)
    const setPassword = (session: string, id: number, header?: Record<string, string>) =>
      call(s, 'PATCH', `/users/${id}`, {
        session,
        body: { password: 'changed-password-1' },
        ...(header ? { headers: header } : {}),
      })

    it('needs the header to change a password', async () => {
      const u = await makeUser(s)
      const r = await setPassword(await adminSession(), u.id)
      expect(r.status).toBe(403)
      expect(r.body.type).toBe('not-authorized/reauthentication-needed-action')
      await login(s, u.username, u.password)
    })

    it('needs the header to delete a user', async () => {
      const u = await makeUser(s)
      const session = await adminSession()
      let r = await call(s, 'DELETE', `/users/${u.id}`, { session })
      expect(r.status).toBe(403)
      expect(r.body.type).toBe('not-authorized/reauthentication-needed-action')
      r = await call(s, 'DELETE', `/users/${u.id}`, {
        session,
        headers: { [REAUTH]: 'password:wrong-password' },
      })
      expect(r.status).toBe(403)
      expect(r.body.type).toBe('not-authorized/reauthentication-failed')
      expect((await call(s, 'GET', `/users/${u.id}`, { key: s.adminKey })).status).toBe(200)
      r = await call(s, 'DELETE', `/users/${u.id}`, {
        session,
        headers: { [REAUTH]: `password:${ADMIN_PASSWORD}` },
      })
      expect(r.status).toBe(204)
      const a = await lastAction('user_destroy')
      expect(a.user_id).toBe(adminId)
      expect(a.username).toBe(ADMIN_USERNAME)
    })

    it('refuses a wrong password, and accepts the right one (also under the Files.com header name)', async () => {
      const u = await makeUser(s)
      const session = await adminSession()
      let r = await setPassword(session, u.id, { [REAUTH]: 'password:not-the-password' })
      expect(r.status).toBe(403)
      expect(r.body.type).toBe('not-authorized/reauthentication-failed')
      await login(s, u.username, u.password)
      r = await setPassword(session, u.id, { 'X-Files-Reauthentication': `password:${ADMIN_PASSWORD}` })
      expect(r.status).toBe(200)
      await login(s, u.username, 'changed-password-1')
      const a = await lastAction('user_update')
      expect(a.user_id).toBe(adminId)
      expect(a.display).toBe(`Updated user ${u.username} (password)`)
    })

    it('refuses a header that is not password:<password>', async () => {
      const u = await makeUser(s)
      const r = await setPassword(await adminSession(), u.id, { [REAUTH]: ADMIN_PASSWORD })
      expect(r.status).toBe(400)
      expect(r.body.type).toBe('bad-request/reauthentication-needed-fields')
    })

    it('ends the session at the third wrong password in a row', async () => {
      const u = await makeUser(s)
      const session = await adminSession()
      const wrong = { [REAUTH]: 'password:still-wrong' }
      // A success in between starts the count again.
      expect((await setPassword(session, u.id, wrong)).body.type).toBe(
        'not-authorized/reauthentication-failed',
      )
      expect((await setPassword(session, u.id, wrong)).body.type).toBe(
        'not-authorized/reauthentication-failed',
      )
      expect((await setPassword(session, u.id, { [REAUTH]: `password:${ADMIN_PASSWORD}` })).status).toBe(200)
      expect((await setPassword(session, u.id, wrong)).body.type).toBe(
        'not-authorized/reauthentication-failed',
      )
      expect((await setPassword(session, u.id, wrong)).body.type).toBe(
        'not-authorized/reauthentication-failed',
      )
      const r = await setPassword(session, u.id, wrong)
      expect(r.status).toBe(403)
      expect(r.body.type).toBe('not-authorized/reauthentication-failed-final')
      const next = await call(s, 'GET', `/users/${adminId}`, { session })
      expect(next.status).toBe(401)
      expect(next.body.type).toBe('not-authenticated/authentication-required')
    })

    it('limits tries to 10 an hour', async () => {
      const u = await makeUser(s)
      const session = await adminSession()
      const right = { [REAUTH]: `password:${ADMIN_PASSWORD}` }
      const wrong = { [REAUTH]: 'password:wrong-again' }
      // Ten tries, never three wrong in a row: 2 wrong, 1 right, repeated, then a last right one.
      const plan = [wrong, wrong, right, wrong, wrong, right, wrong, wrong, right, right]
      for (const h of plan) {
        const r = await setPassword(session, u.id, h)
        expect(r.status).toBe(h === right ? 200 : 403)
      }
      const r = await setPassword(session, u.id, right)
      expect(r.status).toBe(429)
      expect(r.body.type).toBe('rate-limited/reauthentication-rate-limited')
      const retryAfter = Number(r.headers.get('Retry-After'))
      expect(retryAfter).toBeGreaterThan(0)
      expect(retryAfter).toBeLessThanOrEqual(3600)
      // Limited, not ended: the session still works for everything else.
      expect((await call(s, 'GET', `/users/${u.id}`, { session })).status).toBe(200)
    })

    it('keeps both limits when wrong passwords arrive all at once', async () => {
      const u = await makeUser(s)
      const session = await adminSession()
      const wrong = { [REAUTH]: 'password:guess-in-parallel' }
      const results = await Promise.all(Array.from({ length: 15 }, () => setPassword(session, u.id, wrong)))
      const types = results.map((r) => r.body.type as string)
      const count = (t: string) => types.filter((x) => x === t).length
      // Every answer is one of the outcomes; never more than two plain failures before the final one,
      // and never more than ten passwords checked.
      for (const t of types) {
        expect([
          'not-authorized/reauthentication-failed',
          'not-authorized/reauthentication-failed-final',
          'rate-limited/reauthentication-rate-limited',
          'not-authenticated/authentication-required',
        ]).toContain(t)
      }
      expect(count('not-authorized/reauthentication-failed')).toBeLessThanOrEqual(2)
      expect(count('not-authorized/reauthentication-failed-final')).toBeGreaterThanOrEqual(1)
      expect(
        count('not-authorized/reauthentication-failed') +
          count('not-authorized/reauthentication-failed-final'),
      ).toBeLessThanOrEqual(10)
      expect((await call(s, 'GET', `/users/${u.id}`, { session })).status).toBe(401)
    })

    it('asks users changing their own password to reauthenticate, and keeps only that session', async () => {
      const u = await makeUser(s)
      const session = await login(s, u.username, u.password)
      const other = await login(s, u.username, u.password)
      let r = await call(s, 'PATCH', `/users/${u.id}`, { session, body: { password: 'my-own-new-password' } })
      expect(r.status).toBe(403)
      expect(r.body.type).toBe('not-authorized/reauthentication-needed-action')
      r = await call(s, 'PATCH', `/users/${u.id}`, {
        session,
        body: { password: 'my-own-new-password' },
        headers: { [REAUTH]: `password:${u.password}` },
      })
      expect(r.status).toBe(200)
      expect((await call(s, 'GET', `/users/${u.id}`, { session })).status).toBe(200)
      expect((await call(s, 'GET', `/users/${u.id}`, { session: other })).status).toBe(401)
      await login(s, u.username, 'my-own-new-password')
    })

    it('needs no header for changes that are not a password', async () => {
      const r = await call(s, 'PATCH', `/users/${regular.id}`, {
        session: await adminSession(),
        body: { name: 'No Reauth Needed' },
      })
      expect(r.status).toBe(200)
    })
  })
})
