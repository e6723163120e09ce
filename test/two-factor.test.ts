import { beforeEach, describe, expect, it } from 'vitest'
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  adminUserId,
  call,
  dialects,
  expectError,
  login,
  makeKey,
  makeUser,
  type TestServer,
  type TestUser,
  useServer,
} from './helpers/server.js'
import { authenticator, codeAt } from './helpers/totp.js'

const STEP = 30_000
const MINUTE = 60_000

const attempt = (s: TestServer, username: string, password: string, otp?: string) =>
  call(s, 'POST', '/sessions', { body: { username, password, ...(otp === undefined ? {} : { otp }) } })

describe.each(dialects)('two-factor sign-in (%s)', (dialect) => {
  // The server's clock, stepped by the tests: each login's code is of a step of its own.
  let clock = Date.now()
  const s = useServer(dialect, { LOGIN_MAX_FAILURES: '5' }, { now: () => clock })

  beforeEach(async () => {
    clock += 10 * MINUTE
    await s.container.db.deleteFrom('login_failures').execute()
    await s.container.db.deleteFrom('banned_addresses').execute()
  })

  /** A user with a confirmed authenticator: its URI and recovery codes. */
  async function enrolled(overrides: { site_admin?: boolean } = {}) {
    const u = await makeUser(s, overrides)
    const session = await login(s, u.username, u.password)
    const created = await call(s, 'POST', '/two_factor_authentication_methods', {
      session,
      body: { method_type: 'totp' },
    })
    expect(created.status).toBe(201)
    const uri: string = created.body.otpauth_uri
    const confirmed = await call(s, 'PATCH', `/two_factor_authentication_methods/${created.body.id}`, {
      session,
      body: { otp: codeAt(uri, clock) },
    })
    expect(confirmed.status).toBe(200)
    // The next code is of the next step: the confirming one is used.
    clock += STEP
    return {
      user: u,
      uri,
      id: created.body.id as number,
      codes: confirmed.body.recovery_codes as string[],
      session,
    }
  }

  const failedLogins = (username: string) =>
    s.container.db
      .selectFrom('actions')
      .select(['failure_type', 'display', 'interface'])
      .where('action', '=', 'failedlogin')
      .where('username', '=', username)
      .orderBy('id')
      .execute()

  it('enrols a TOTP authenticator: its URI once, confirmed by a code, then ten recovery codes', async () => {
    const u = await makeUser(s)
    const session = await login(s, u.username, u.password)
    const created = await call(s, 'POST', '/two_factor_authentication_methods', {
      session,
      body: { method_type: 'totp', name: 'Phone' },
    })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({
      user_id: u.id,
      method_type: 'totp',
      name: 'Phone',
      confirmed: false,
    })
    const totp = authenticator(created.body.otpauth_uri)
    expect(created.body.otpauth_uri).toMatch(/^otpauth:\/\/totp\//)
    expect({
      label: totp.label,
      algorithm: totp.algorithm,
      digits: totp.digits,
      period: totp.period,
    }).toEqual({
      label: u.username,
      algorithm: 'SHA1',
      digits: 6,
      period: 30,
    })
    // The secret is stored encrypted, and shown never again.
    const stored = await s.container.db
      .selectFrom('two_factor_methods')
      .select('secret')
      .where('id', '=', created.body.id)
      .executeTakeFirstOrThrow()
    expect(stored.secret).not.toContain(totp.secret.base32)
    const listed = await call(s, 'GET', '/two_factor_authentication_methods', { session })
    expect(listed.status).toBe(200)
    expect(listed.body).toHaveLength(1)
    expect(listed.body[0].otpauth_uri).toBeUndefined()
    expect(listed.text).not.toContain(totp.secret.base32)

    const path = `/two_factor_authentication_methods/${created.body.id}`
    const wrong = codeAt(created.body.otpauth_uri, clock) === '000000' ? '111111' : '000000'
    expectError(
      await call(s, 'PATCH', path, { session, body: { otp: wrong } }),
      401,
      'not-authenticated/one-time-password-incorrect',
    )
    const confirmed = await call(s, 'PATCH', path, {
      session,
      body: { otp: codeAt(created.body.otpauth_uri, clock) },
    })
    expect(confirmed.status).toBe(200)
    expect(confirmed.body.confirmed).toBe(true)
    expect(confirmed.body.setup_expires_at).toBeNull()
    expect(confirmed.body.recovery_codes).toHaveLength(10)
    expect(new Set(confirmed.body.recovery_codes).size).toBe(10)
    const hashes = await s.container.db
      .selectFrom('two_factor_recovery_codes')
      .select('code_hash')
      .where('user_id', '=', u.id)
      .execute()
    expect(hashes).toHaveLength(10)
    expect(hashes.map((h) => h.code_hash)).not.toContain(confirmed.body.recovery_codes[0])
    expectError(
      await call(s, 'PATCH', path, { session, body: { otp: codeAt(created.body.otpauth_uri, clock) } }),
      401,
      'not-authenticated/two-factor-authentication-error',
    )
    const shown = await call(s, 'GET', path, { session })
    expect(shown.body.recovery_codes).toBeUndefined()
    // XML too.
    const xml = await call(s, 'GET', path, { session, accept: 'application/xml' })
    expect(xml.text).toContain('<two-factor-authentication-method>')
  })

  it('refuses an enrolment confirmed after its setup time, a method_type other than totp, and a site-wide key', async () => {
    const u = await makeUser(s)
    const session = await login(s, u.username, u.password)
    const created = await call(s, 'POST', '/two_factor_authentication_methods', {
      session,
      body: { method_type: 'totp' },
    })
    clock += 16 * MINUTE
    expectError(
      await call(s, 'PATCH', `/two_factor_authentication_methods/${created.body.id}`, {
        session,
        body: { otp: codeAt(created.body.otpauth_uri, clock) },
      }),
      401,
      'not-authenticated/two-factor-authentication-setup-expired',
    )
    // An enrolment never confirmed asks for nothing at sign-in.
    expect((await attempt(s, u.username, u.password)).status).toBe(201)
    expectError(
      await call(s, 'POST', '/two_factor_authentication_methods', { session, body: { method_type: 'sms' } }),
      400,
      'bad-request/request-params-invalid',
    )
    expectError(
      await call(s, 'POST', '/two_factor_authentication_methods', {
        key: s.adminKey,
        body: { method_type: 'totp' },
      }),
      401,
      'not-authenticated/two-factor-authentication-error',
    )
  })

  it('asks a user with a method for the code, accepts it once, refuses wrong ones as failed logins', async () => {
    const { user, uri } = await enrolled()
    expectError(
      await attempt(s, user.username, user.password),
      403,
      'not-authorized/two-factor-authentication-required',
    )
    const wrong = codeAt(uri, clock) === '123456' ? '654321' : '123456'
    expectError(
      await attempt(s, user.username, user.password, wrong),
      401,
      'not-authenticated/one-time-password-incorrect',
    )
    // A right code with a wrong password is a wrong password.
    expectError(
      await attempt(s, user.username, 'wrong-password', codeAt(uri, clock)),
      401,
      'not-authenticated/invalid-username-or-password',
    )
    const code = codeAt(uri, clock)
    const ok = await attempt(s, user.username, user.password, code)
    expect(ok.status).toBe(201)
    expect((await call(s, 'GET', '/user', { session: ok.body.id })).status).toBe(200)
    // The same code again, within its window: refused.
    expectError(
      await attempt(s, user.username, user.password, code),
      401,
      'not-authenticated/one-time-password-incorrect',
    )
    // The previous step's code is in the window but older than the one used: refused too.
    expectError(
      await attempt(s, user.username, user.password, codeAt(uri, clock - STEP)),
      401,
      'not-authenticated/one-time-password-incorrect',
    )
    clock += STEP
    expect((await attempt(s, user.username, user.password, codeAt(uri, clock))).status).toBe(201)

    const failed = await failedLogins(user.username)
    expect(failed.map((f) => f.failure_type)).toEqual([
      'password_mismatch',
      'password_mismatch',
      'password_mismatch',
      'password_mismatch',
    ])
    expect(failed.map((f) => f.display)).toEqual([
      `Failed login for ${user.username} (password_mismatch: one-time password incorrect)`,
      `Failed login for ${user.username} (password_mismatch)`,
      `Failed login for ${user.username} (password_mismatch: one-time password incorrect)`,
      `Failed login for ${user.username} (password_mismatch: one-time password incorrect)`,
    ])
    // Each failure is one of the address for the login defender.
    const scored = await s.container.db.selectFrom('login_failures').select('kind').execute()
    expect(scored.map((r) => r.kind)).toEqual(Array(4).fill('password_mismatch'))
  })

  it('locks the user out after five wrong codes, as after five wrong passwords', async () => {
    const { user, uri } = await enrolled()
    const wrong = () => (codeAt(uri, clock) === '111111' ? '222222' : '111111')
    for (let i = 0; i < 5; i++) {
      expectError(
        await attempt(s, user.username, user.password, wrong()),
        401,
        'not-authenticated/one-time-password-incorrect',
      )
    }
    expectError(
      await attempt(s, user.username, user.password, codeAt(uri, clock)),
      401,
      'not-authenticated/locked-out',
    )
  })

  it('accepts each recovery code once, in any case and without dashes', async () => {
    const { user, codes } = await enrolled()
    const [first, second] = codes as [string, string]
    expect((await attempt(s, user.username, user.password, first)).status).toBe(201)
    expectError(
      await attempt(s, user.username, user.password, first),
      401,
      'not-authenticated/one-time-password-incorrect',
    )
    expect(
      (await attempt(s, user.username, user.password, second.replaceAll('-', '').toUpperCase())).status,
    ).toBe(201)
    expectError(
      await attempt(s, user.username, user.password, 'aaaa-bbbb-cccc-dddd'),
      401,
      'not-authenticated/one-time-password-incorrect',
    )
  })

  it('leaves API keys alone: a key of a user with two-factor sign-in needs no code', async () => {
    const { user } = await enrolled()
    const key = await makeKey(s, user.id)
    const r = await call(s, 'GET', '/user', { key: key.key })
    expect(r.status).toBe(200)
    expect(r.body.username).toBe(user.username)
  })

  it('removes a method only after reauthentication with the password; then the password is enough', async () => {
    const { user, id, session } = await enrolled()
    const path = `/two_factor_authentication_methods/${id}`
    expectError(
      await call(s, 'DELETE', path, { session }),
      403,
      'not-authorized/reauthentication-needed-action',
    )
    expectError(
      await call(s, 'DELETE', path, {
        session,
        headers: { 'X-Service-Reauthentication': 'password:wrong-password' },
      }),
      403,
      'not-authorized/reauthentication-failed',
    )
    // Someone else cannot see it, let alone remove it.
    const other = await makeUser(s)
    const otherSession = await login(s, other.username, other.password)
    expectError(
      await call(s, 'DELETE', path, {
        session: otherSession,
        headers: { 'X-Service-Reauthentication': `password:${other.password}` },
      }),
      404,
      'not-found',
    )
    expect(
      (await call(s, 'GET', '/two_factor_authentication_methods', { session: otherSession })).body,
    ).toEqual([])
    expectError(await call(s, 'GET', path, { session: otherSession }), 404, 'not-found')
    const gone = await call(s, 'DELETE', path, {
      session,
      headers: { 'X-Service-Reauthentication': `password:${user.password}` },
    })
    expect(gone.status).toBe(204)
    expect(
      await s.container.db
        .selectFrom('two_factor_recovery_codes')
        .select('id')
        .where('user_id', '=', user.id)
        .execute(),
    ).toEqual([])
    expect((await attempt(s, user.username, user.password)).status).toBe(201)
  })

  it('lets a site admin list and remove the method of a user who lost their phone', async () => {
    const { user, id } = await enrolled()
    const listed = await call(s, 'GET', `/two_factor_authentication_methods?user_id=${user.id}`, {
      key: s.adminKey,
    })
    expect(listed.body.map((m: { id: number }) => m.id)).toEqual([id])
    const other = await makeUser(s)
    const otherSession = await login(s, other.username, other.password)
    expectError(
      await call(s, 'GET', `/two_factor_authentication_methods?user_id=${user.id}`, {
        session: otherSession,
      }),
      403,
      'not-authorized/site-admin-required',
    )
    expect(
      (await call(s, 'DELETE', `/two_factor_authentication_methods/${id}`, { key: s.adminKey })).status,
    ).toBe(204)
    expect((await attempt(s, user.username, user.password)).status).toBe(201)
  })

  it('gives a user who must use two-factor sign-in and has none a session that can only enrol', async () => {
    const u = await makeUser(s)
    const set = await call(s, 'PATCH', `/users/${u.id}`, {
      key: s.adminKey,
      body: { require_2fa: 'always_require' },
    })
    expect(set.status).toBe(200)
    expect(set.body.require_2fa).toBe('always_require')
    expectError(
      await call(s, 'PATCH', `/users/${u.id}`, { key: s.adminKey, body: { require_2fa: 'sometimes' } }),
      400,
      'bad-request/request-params-invalid',
    )
    const r = await attempt(s, u.username, u.password)
    expect(r.status).toBe(201)
    const session: string = r.body.id
    expectError(
      await call(s, 'GET', '/public_keys', { session }),
      403,
      'not-authorized/two-factor-authentication-required',
    )
    expectError(
      await call(s, 'GET', '/folders', { session }),
      403,
      'not-authorized/two-factor-authentication-required',
    )
    const before = await call(s, 'GET', '/user', { session })
    expect(before.status).toBe(200)
    expect(before.body).toMatchObject({ active_2fa: false, type_of_2fa: null })
    expect((await call(s, 'GET', '/site', { session })).body.session).toEqual({
      two_factor_setup_needed: true,
      read_only: false,
    })
    // The user may not lift the requirement themselves.
    expectError(
      await call(s, 'PATCH', `/users/${u.id}`, { session, body: { require_2fa: 'never_require' } }),
      403,
      'not-authorized/two-factor-authentication-required',
    )
    const created = await call(s, 'POST', '/two_factor_authentication_methods', {
      session,
      body: { method_type: 'totp' },
    })
    expect(created.status).toBe(201)
    expect(
      (
        await call(s, 'PATCH', `/two_factor_authentication_methods/${created.body.id}`, {
          session,
          body: { otp: codeAt(created.body.otpauth_uri, clock) },
        })
      ).status,
    ).toBe(200)
    // Enrolled: the same session now reaches everything.
    expect((await call(s, 'GET', '/public_keys', { session })).status).toBe(200)
    expect((await call(s, 'GET', '/site', { session })).body.session).toEqual({
      two_factor_setup_needed: false,
      read_only: false,
    })
    // The user's record says so, computed from the confirmed method (a sent value changes nothing).
    const after = await call(s, 'GET', `/users/${u.id}`, { key: s.adminKey })
    expect(after.body).toMatchObject({ active_2fa: true, type_of_2fa: 'totp' })
    const listed = await call(s, 'GET', '/users?per_page=1000', { key: s.adminKey })
    expect(listed.body.find((x: { id: number }) => x.id === u.id)).toMatchObject({ active_2fa: true })
    expect(listed.body.find((x: { id: number }) => x.id !== u.id)).toMatchObject({
      active_2fa: false,
      type_of_2fa: null,
    })
    const echo = await call(s, 'PATCH', `/users/${u.id}`, {
      key: s.adminKey,
      body: { active_2fa: true, type_of_2fa: 'totp', name: 'Enrolled' },
    })
    expect(echo.status, echo.text).toBe(200)
    expectError(
      await call(s, 'PATCH', `/users/${u.id}`, { key: s.adminKey, body: { active_2fa: false } }),
      400,
      'bad-request/request-params-invalid',
    )
    expect((await call(s, 'GET', '/site', { key: s.adminKey })).body.session).toBeNull()
    // An API key of such a user is not restricted.
    const other = await makeUser(s)
    await call(s, 'PATCH', `/users/${other.id}`, { key: s.adminKey, body: { require_2fa: 'always_require' } })
    const key = await makeKey(s, other.id)
    expect((await call(s, 'GET', '/public_keys', { key: key.key })).status).toBe(200)
  })

  it('follows the site rule (all users or site admins only) unless the user says otherwise', async () => {
    const plain = await makeUser(s)
    const admin = await makeUser(s, { site_admin: true })
    const plainSession = await login(s, plain.username, plain.password)
    expectError(
      await call(s, 'PATCH', '/site', { session: plainSession, body: { require_2fa: true } }),
      403,
      'not-authorized/site-admin-required',
    )
    expectError(
      await call(s, 'PATCH', '/site', { key: s.adminKey, body: { require_2fa_user_type: 'everyone' } }),
      400,
      'bad-request/request-params-invalid',
    )
    const set = await call(s, 'PATCH', '/site', {
      key: s.adminKey,
      body: { require_2fa: true, require_2fa_user_type: 'site_admins' },
    })
    expect(set.status).toBe(200)
    expect(set.body).toMatchObject({ require_2fa: true, require_2fa_user_type: 'site_admins' })
    expect((await call(s, 'GET', '/site', { key: s.adminKey })).body).toMatchObject({ require_2fa: true })
    try {
      const restricted = (u: TestUser) =>
        login(s, u.username, u.password).then((session) => call(s, 'GET', '/public_keys', { session }))
      expectError(await restricted(admin), 403, 'not-authorized/two-factor-authentication-required')
      expect((await restricted(plain)).status).toBe(200)
      await call(s, 'PATCH', '/site', { key: s.adminKey, body: { require_2fa_user_type: 'all' } })
      expectError(await restricted(plain), 403, 'not-authorized/two-factor-authentication-required')
      await call(s, 'PATCH', `/users/${plain.id}`, {
        key: s.adminKey,
        body: { require_2fa: 'never_require' },
      })
      expect((await restricted(plain)).status).toBe(200)
    } finally {
      await call(s, 'PATCH', '/site', {
        key: s.adminKey,
        body: { require_2fa: false, require_2fa_user_type: 'all' },
      })
    }
    // The bootstrap admin is unaffected once the rule is off again.
    expect((await attempt(s, ADMIN_USERNAME, ADMIN_PASSWORD)).status).toBe(201)
    expect(await adminUserId(s)).toBeGreaterThan(0)
  })
})
