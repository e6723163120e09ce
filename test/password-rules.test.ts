import { XMLParser } from 'fast-xml-parser'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  checkAgainstRules,
  completeForRules,
  DEFAULT_RULES,
} from '../src/modules/passwords/password-rules.js'
import {
  ADMIN_PASSWORD,
  adminUserId,
  call,
  dialects,
  expectError,
  login,
  makeKey,
  makeUser,
  useServer,
} from './helpers/server.js'

const REAUTH = 'X-Service-Reauthentication'
const DAY = 86_400_000
const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@_', parseTagValue: false })

const DEFAULTS = {
  password_min_length: 8,
  password_require_letter: false,
  password_require_mixed: false,
  password_require_number: false,
  password_require_special: false,
  max_prior_passwords: 0,
  password_validity_days: null,
}

/** Site rules, then the API refusing or taking passwords and the change a user is held to. */
describe.each(dialects)('password rules (%s)', (dialect) => {
  const s = useServer(dialect)
  let userKey: string

  const setRules = async (body: Record<string, unknown>) => {
    const r = await call(s, 'PATCH', '/site', { key: s.adminKey, body })
    expect(r.status).toBe(200)
    return r
  }
  beforeAll(async () => {
    const u = await makeUser(s)
    userKey = (await makeKey(s, u.id)).key
  })
  afterEach(() => setRules(DEFAULTS))

  const createUser = (body: Record<string, unknown>) => call(s, 'POST', '/users', { key: s.adminKey, body })
  const modelErrors = (r: { status: number; body: any }) => {
    expectError(r as never, 422, 'processing-failure/model-save-error')
    return r.body.model_errors
  }

  describe('GET and PATCH /site', () => {
    it('shows the defaults to a site admin, in JSON and XML', async () => {
      const r = await call(s, 'GET', '/site', { key: s.adminKey })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ id: s.container.site.id, ...DEFAULTS })
      const x = await call(s, 'GET', '/site.xml', { key: s.adminKey })
      expect(x.status).toBe(200)
      const site = xml.parse(x.text).site
      expect(site.password_min_length).toEqual({ '#text': '8', '@_type': 'integer' })
      expect(site.password_require_mixed).toEqual({ '#text': 'false', '@_type': 'boolean' })
    })

    it('shows the rules to every user, and changes them only for site admins', async () => {
      const shown = await call(s, 'GET', '/site', { key: userKey })
      expect(shown.status, shown.text).toBe(200)
      expect(shown.body).toMatchObject({ password_min_length: 8 })
      expect(shown.body).not.toHaveProperty('allowed_ips')
      const r = await call(s, 'PATCH', '/site', { key: userKey, body: { password_min_length: 12 } })
      expectError(r, 403, 'not-authorized/site-admin-required')
      expect((await call(s, 'GET', '/site', { key: s.adminKey })).body.password_min_length).toBe(8)
    })

    it('changes the rules, records an update Action, and takes an XML body', async () => {
      const r = await setRules({
        password_min_length: 12,
        password_require_special: true,
        max_prior_passwords: 3,
      })
      expect(r.body).toMatchObject({
        password_min_length: 12,
        password_require_special: true,
        max_prior_passwords: 3,
      })
      const action = await s.container.db
        .selectFrom('actions')
        .selectAll()
        .where('action', '=', 'update')
        .orderBy('id', 'desc')
        .executeTakeFirstOrThrow()
      expect(action.display).toContain(
        "changed the site's password rules (password_min_length, password_require_special, max_prior_passwords)",
      )
      const y = await call(s, 'PATCH', '/site.xml', {
        key: s.adminKey,
        contentType: 'application/xml',
        raw: '<site><password_validity_days type="integer">30</password_validity_days><password_require_number type="boolean">true</password_require_number></site>',
      })
      expect(y.status).toBe(200)
      expect(xml.parse(y.text).site.password_validity_days['#text']).toBe('30')
      expect(xml.parse(y.text).site.password_require_number['#text']).toBe('true')
    })

    it('refuses values out of range with model-save-error naming each field, and wrong types with 400', async () => {
      const r = await call(s, 'PATCH', '/site', {
        key: s.adminKey,
        body: { password_min_length: 4, max_prior_passwords: 25, password_validity_days: -1 },
      })
      expect(modelErrors(r)).toEqual({
        password_min_length: ['must be a whole number from 8 to 128'],
        max_prior_passwords: ['must be a whole number from 0 to 24'],
        password_validity_days: ['must be a whole number from 1 to 3650, or null for none'],
      })
      const t = await call(s, 'PATCH', '/site', {
        key: s.adminKey,
        body: { password_require_letter: 'sometimes' },
      })
      expect(t.status).toBe(400)
      expect((await call(s, 'GET', '/site', { key: s.adminKey })).body).toMatchObject(DEFAULTS)
      // A read-only field changed is refused; its echo passes.
      const echo = await call(s, 'PATCH', '/site', { key: s.adminKey, body: { name: 'Other name' } })
      expectError(echo, 400, 'bad-request/request-params-invalid')
      // 0 days means forever, like null.
      expect((await setRules({ password_validity_days: 0 })).body.password_validity_days).toBeNull()
    })
  })

  describe('enforced where a password is set', () => {
    const cases: [string, Record<string, unknown>, string, string][] = [
      ['length', { password_min_length: 12 }, 'eleven-char', 'is too short (minimum is 12 characters)'],
      ['letter', { password_require_letter: true }, '1234567890', 'must contain a letter'],
      [
        'mixed',
        { password_require_mixed: true },
        'all-lower-case',
        'must contain both upper-case and lower-case letters',
      ],
      ['number', { password_require_number: true }, 'no-digits-here', 'must contain a number'],
      [
        'special',
        { password_require_special: true },
        'OnlyLetters123',
        'must contain a special character (not a letter or a number)',
      ],
    ]
    it.each(cases)(
      '%s: refused on create, admin update and the user’s own change',
      async (_n, rules, bad, message) => {
        await setRules(rules)
        const created = await createUser({ username: `rule-${_n}`, password: bad })
        expect(modelErrors(created)).toEqual({ password: [message] })

        const u = await makeUser(s)
        const byAdmin = await call(s, 'PATCH', `/users/${u.id}`, { key: s.adminKey, body: { password: bad } })
        expect(modelErrors(byAdmin)).toEqual({ password: [message] })

        const session = await login(s, u.username, u.password)
        const own = await call(s, 'PATCH', `/users/${u.id}`, {
          session,
          body: { password: bad },
          headers: { [REAUTH]: `password:${u.password}` },
        })
        expect(modelErrors(own)).toEqual({ password: [message] })
        // The password that passes every rule is taken.
        const good = 'Good-Passw0rd-Long'
        const ok = await createUser({ username: `rule-${_n}-ok`, password: good })
        expect(ok.status).toBe(201)
      },
    )

    it('lists every broken rule at once, with the other fields’ problems', async () => {
      await setRules({ password_require_number: true, password_require_special: true })
      const r = await createUser({ username: 'bad name!', password: 'abcdefghij' })
      expect(modelErrors(r)).toEqual({
        username: ['may contain only letters, digits and @ . _ + - (at most 128 characters)'],
        password: ['must contain a number', 'must contain a special character (not a letter or a number)'],
      })
    })

    it('never takes the username as the password, in any letter case', async () => {
      const r = await createUser({ username: 'Samantha.Jones', password: 'samantha.JONES' })
      expect(modelErrors(r)).toEqual({ password: ['must not be the username'] })
      const u = await makeUser(s, { username: 'renamed-later' })
      const renamed = await call(s, 'PATCH', `/users/${u.id}`, {
        key: s.adminKey,
        body: { username: 'new-name-x', password: 'NEW-NAME-X' },
      })
      expect(modelErrors(renamed)).toEqual({ password: ['must not be the username'] })
    })

    it('keeps the default 8 characters', async () => {
      const r = await createUser({ username: 'short-one', password: 'seven77' })
      expect(modelErrors(r)).toEqual({ password: ['is too short (minimum is 8 characters)'] })
    })

    it('refuses the last N passwords (max_prior_passwords), keeping only hashes', async () => {
      await setRules({ max_prior_passwords: 2 })
      const u = await makeUser(s, { password: 'first-password-1' })
      const change = (password: string) =>
        call(s, 'PATCH', `/users/${u.id}`, { key: s.adminKey, body: { password } })
      expect(modelErrors(await change('first-password-1'))).toEqual({
        password: ['must not be one of your last 2 passwords'],
      })
      expect((await change('second-password-2')).status).toBe(200)
      expect(modelErrors(await change('first-password-1'))).toEqual({
        password: ['must not be one of your last 2 passwords'],
      })
      expect((await change('third-password-3')).status).toBe(200)
      // Two back is now the third-latest: allowed again.
      expect((await change('first-password-1')).status).toBe(200)
      const kept = await s.container.db
        .selectFrom('password_history')
        .selectAll()
        .where('user_id', '=', u.id)
        .execute()
      expect(kept).toHaveLength(3)
      for (const row of kept) {
        expect(row.password_hash).toMatch(/^scrypt\$/)
        expect(row.password_hash).not.toContain('password')
      }
      // Without the rule the same password may be set again.
      await setRules({ max_prior_passwords: 0 })
      expect((await change('first-password-1')).status).toBe(200)
    })

    it('makes the CLI’s generated password satisfy the rules', async () => {
      const strict = {
        ...DEFAULT_RULES,
        requireLetter: true,
        requireMixed: true,
        requireNumber: true,
        requireSpecial: true,
      }
      const errors = {}
      checkAgainstRules(strict, 'abcdefghij', 'someone', errors)
      expect(Object.keys(errors)).toEqual(['password'])
      const fixed = {}
      checkAgainstRules(
        strict,
        completeForRules(() => 'abcdefghij', strict),
        'someone',
        fixed,
      )
      expect(fixed).toEqual({})
    })
  })

  describe('require_password_change', () => {
    it('lets the user sign in to a session that can only change the password, then frees it', async () => {
      const u = await makeUser(s)
      const ownKey = (await makeKey(s, u.id)).key
      const set = await call(s, 'PATCH', `/users/${u.id}`, {
        key: s.adminKey,
        body: { require_password_change: true },
      })
      expect(set.status).toBe(200)
      expect(set.body.require_password_change).toBe(true)

      const session = await login(s, u.username, u.password)
      for (const [method, path] of [
        ['GET', '/folders'],
        ['GET', '/api_keys'],
        ['GET', `/users/${await adminUserId(s)}`],
        ['POST', '/folders/new-one'],
        ['GET', '/history/login'],
      ] as const) {
        const r = await call(s, method, path, { session, ...(method === 'POST' ? { body: {} } : {}) })
        expectError(r, 403, 'not-authorized/password-change-required')
      }
      const me = await call(s, 'GET', '/user', { session })
      expect(me.status).toBe(200)
      expect(me.body.require_password_change).toBe(true)
      expect((await call(s, 'GET', `/users/${u.id}.xml`, { session })).status).toBe(200)
      // An API key is its own credential: it keeps working.
      expect((await call(s, 'GET', '/api_keys', { key: ownKey })).status).toBe(200)

      // The user cannot lift the flag, nor set the same password again.
      const lift = await call(s, 'PATCH', `/users/${u.id}`, {
        session,
        body: { require_password_change: false },
      })
      expectError(lift, 403, 'not-authorized/site-admin-required')
      const same = await call(s, 'PATCH', `/users/${u.id}`, {
        session,
        body: { password: u.password },
        headers: { [REAUTH]: `password:${u.password}` },
      })
      expect(modelErrors(same)).toEqual({ password: ['must not be the current password'] })

      const changed = await call(s, 'PATCH', `/users/${u.id}`, {
        session,
        body: { password: 'a-fresh-password-9', require_password_change: true },
        headers: { [REAUTH]: `password:${u.password}` },
      })
      expect(changed.status).toBe(200)
      expect(changed.body.require_password_change).toBe(false)
      expect((await call(s, 'GET', '/api_keys', { session })).status).toBe(200)
      const row = await s.container.db
        .selectFrom('users')
        .select('require_password_change')
        .where('id', '=', u.id)
        .executeTakeFirstOrThrow()
      expect(row.require_password_change).toBe(0)
    })

    it('holds back a site admin’s session too, but not other users’ records reached by an admin', async () => {
      const admin = await makeUser(s, { site_admin: true })
      await call(s, 'PATCH', `/users/${admin.id}`, {
        key: s.adminKey,
        body: { require_password_change: true },
      })
      const session = await login(s, admin.username, admin.password)
      const other = await makeUser(s)
      const r = await call(s, 'PATCH', `/users/${other.id}`, { session, body: { name: 'x' } })
      expectError(r, 403, 'not-authorized/password-change-required')
      expectError(await call(s, 'GET', '/users', { session }), 403, 'not-authorized/password-change-required')
      // The rules the new password must meet stay readable.
      expect((await call(s, 'GET', '/site', { session })).body.password_min_length).toBe(8)
    })

    it('is an admin’s field: set on create, refused to the user themselves', async () => {
      const created = await createUser({
        username: 'must-change',
        password: 'initial-password',
        require_password_change: true,
      })
      expect(created.status).toBe(201)
      expect(created.body.require_password_change).toBe(true)
      const u = await makeUser(s)
      const key = (await makeKey(s, u.id)).key
      const r = await call(s, 'PATCH', `/users/${u.id}`, { key, body: { require_password_change: true } })
      expectError(r, 403, 'not-authorized/site-admin-required')
      const v = await call(s, 'PATCH', `/users/${u.id}`, { key, body: { password_validity_days: 5 } })
      expectError(v, 403, 'not-authorized/site-admin-required')
    })

    it('does not hold back a Shared/Bot user, who cannot change their own password', async () => {
      const bot = await makeUser(s, { self_managed: false })
      await call(s, 'PATCH', `/users/${bot.id}`, { key: s.adminKey, body: { require_password_change: true } })
      const session = await login(s, bot.username, bot.password)
      const r = await call(s, 'GET', '/users', { session })
      expect(r.status).toBe(200)
      expect(r.body.map((x: { id: number }) => x.id)).toEqual([bot.id])
      expect(r.body[0].require_password_change).toBe(true)
    })
  })

  describe('password expiry', () => {
    const age = async (userId: number, days: number) => {
      await s.container.db
        .updateTable('users')
        .set({ password_set_at: Date.now() - days * DAY })
        .where('id', '=', userId)
        .execute()
    }

    it('expires a password older than the user’s password_validity_days', async () => {
      const u = await makeUser(s)
      const r = await call(s, 'PATCH', `/users/${u.id}`, {
        key: s.adminKey,
        body: { password_validity_days: 30 },
      })
      expect(r.body).toMatchObject({ password_validity_days: 30, password_expired: false })
      expect(r.body.days_remaining_until_password_expire).toBe(30)
      await age(u.id, 31)
      const shown = await call(s, 'GET', `/users/${u.id}`, { key: s.adminKey })
      expect(shown.body).toMatchObject({ password_expired: true, days_remaining_until_password_expire: 0 })
      expect(Date.parse(shown.body.password_expire_at)).toBeLessThan(Date.now())

      const session = await login(s, u.username, u.password)
      const refused = await call(s, 'GET', '/folders', { session })
      expectError(refused, 403, 'not-authorized/password-change-required')
      expect(refused.body.error).toContain('Your password has expired')
      const changed = await call(s, 'PATCH', `/users/${u.id}`, {
        session,
        body: { password: 'renewed-password-1' },
        headers: { [REAUTH]: `password:${u.password}` },
      })
      expect(changed.status).toBe(200)
      expect(changed.body).toMatchObject({
        password_expired: false,
        days_remaining_until_password_expire: 30,
      })
      expect((await call(s, 'GET', '/api_keys', { session })).status).toBe(200)
    })

    it('expires every password older than the site’s password_validity_days, the shorter rule winning', async () => {
      const u = await makeUser(s)
      await call(s, 'PATCH', `/users/${u.id}`, { key: s.adminKey, body: { password_validity_days: 100 } })
      await age(u.id, 11)
      let session = await login(s, u.username, u.password)
      expect((await call(s, 'GET', '/api_keys', { session })).status).toBe(200)
      await setRules({ password_validity_days: 10 })
      expectError(
        await call(s, 'GET', '/folders', { session }),
        403,
        'not-authorized/password-change-required',
      )
      await setRules({ password_validity_days: null })
      session = await login(s, u.username, u.password)
      expect((await call(s, 'GET', '/api_keys', { session })).status).toBe(200)
    })

    it('refuses validity values out of range', async () => {
      const u = await makeUser(s)
      const r = await call(s, 'PATCH', `/users/${u.id}`, {
        key: s.adminKey,
        body: { password_validity_days: 5000 },
      })
      expect(modelErrors(r)).toEqual({
        password_validity_days: ['must be a whole number from 1 to 3650, or null for none'],
      })
    })
  })

  it('asks for the admin’s own password to change another user’s (unchanged by the rules)', async () => {
    const u = await makeUser(s)
    const session = await login(s, 'admin', ADMIN_PASSWORD)
    const r = await call(s, 'PATCH', `/users/${u.id}`, { session, body: { password: 'another-password-1' } })
    expectError(r, 403, 'not-authorized/reauthentication-needed-action')
  })
})
