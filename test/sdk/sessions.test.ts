import Files from 'files.com/lib/Files.js'
import ApiKey from 'files.com/lib/models/ApiKey.js'
import Session from 'files.com/lib/models/Session.js'
import { describe, expect, it } from 'vitest'
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  dialects,
  login,
  makeUser,
  type TestServer,
} from '../helpers/server.js'
import { codeAt } from '../helpers/totp.js'
import { describeError, type Recorder, sdkError, sdkServer } from './sdk.js'

describe.each(dialects)('files.com SDK: sessions (%s)', (dialect) => {
  let s: TestServer
  let rec: Recorder
  sdkServer(dialect, (server, recorder) => {
    s = server
    rec = recorder
  })

  it('logs in with Session.create and uses the session id for later calls', async () => {
    const session = await Session.create({ username: ADMIN_USERNAME, password: ADMIN_PASSWORD })
    expect(session.id).toMatch(/^[0-9a-f]{64}$/)
    expect(session.getId()).toBe(session.id)

    Files.setSessionId(session.id)
    const key = await ApiKey.create({ name: 'made in a session' })
    expect(key.key).toMatch(/^[0-9a-f]{64}$/)
    const admin = await s.container.db
      .selectFrom('users')
      .select('id')
      .where('username', '=', ADMIN_USERNAME)
      .executeTakeFirstOrThrow()
    expect(key.user_id).toBe(admin.id)

    const sent = rec.requests.at(-1)!
    expect(sent.method).toBe('POST')
    expect(sent.headers['x-filesapi-auth']).toBe(session.id)
    expect(sent.headers['x-filesapi-key']).toBeUndefined()
  })

  it('ends the session with Session.delete; the id then no longer authenticates', async () => {
    const session = await Session.create({ username: ADMIN_USERNAME, password: ADMIN_PASSWORD })
    Files.setSessionId(session.id)
    expect(Array.isArray(await ApiKey.list())).toBe(true)

    await Session.delete()
    const logout = rec.requests.at(-1)!
    expect([logout.method, logout.url]).toEqual(['DELETE', '/api/rest/v1/sessions'])

    const err = await sdkError(ApiKey.list())
    expect(describeError(err)).toEqual({
      className: 'NotAuthenticated_AuthenticationRequiredError',
      type: 'not-authenticated/authentication-required',
      httpCode: 401,
    })
  })

  it('ends the session with Session.destroy as well', async () => {
    const session = await Session.create({ username: ADMIN_USERNAME, password: ADMIN_PASSWORD })
    Files.setSessionId(session.id)
    await Session.destroy()
    const err = await sdkError(ApiKey.list())
    expect(err.constructor.name).toBe('NotAuthenticated_AuthenticationRequiredError')
  })

  it('accepts Session.delete for a session that is already gone', async () => {
    Files.setSessionId('0'.repeat(64))
    await expect(Session.delete()).resolves.toBeUndefined()
  })

  it('logs a regular user in, whose session reaches only their own keys', async () => {
    const u = await makeUser(s)
    const session = await Session.create({ username: u.username, password: u.password })
    Files.setSessionId(session.id)
    const mine = await ApiKey.create({ name: 'mine' })
    expect(mine.user_id).toBe(u.id)
    const listed = await ApiKey.list()
    expect(listed.map((k) => k.id)).toEqual([mine.id])
  })

  it('logs in even when an API key is configured, because the SDK leaves the key out of POST /sessions', async () => {
    Files.setApiKey(s.adminKey)
    const session = await Session.create({ username: ADMIN_USERNAME, password: ADMIN_PASSWORD })
    expect(session.id).toMatch(/^[0-9a-f]{64}$/)
    expect(rec.requests.at(-1)!.headers['x-filesapi-key']).toBeUndefined()
  })

  it('throws NotAuthenticated_InvalidUsernameOrPasswordError for a wrong password', async () => {
    const u = await makeUser(s)
    const err = await sdkError(Session.create({ username: u.username, password: 'not-the-password' }))
    expect(describeError(err)).toEqual({
      className: 'NotAuthenticated_InvalidUsernameOrPasswordError',
      type: 'not-authenticated/invalid-username-or-password',
      httpCode: 401,
    })
    expect(err.name).toBe('NotAuthenticated_InvalidUsernameOrPasswordError')
    expect(err.code).toBe(401)
    expect(err.title).toEqual(expect.any(String))
    expect(err.instance).toEqual(expect.any(String))
  })

  it('throws the same error class for an unknown user name', async () => {
    const err = await sdkError(Session.create({ username: 'nobody-by-this-name', password: 'whatever-1' }))
    expect(err.constructor.name).toBe('NotAuthenticated_InvalidUsernameOrPasswordError')
  })

  it('refuses GET /api_key over a session with NotAuthorized_MustAuthenticateWithApiKeyError', async () => {
    const session = await Session.create({ username: ADMIN_USERNAME, password: ADMIN_PASSWORD })
    Files.setSessionId(session.id)
    const err = await sdkError(ApiKey.findCurrent())
    expect(describeError(err)).toEqual({
      className: 'NotAuthorized_MustAuthenticateWithApiKeyError',
      type: 'not-authorized/must-authenticate-with-api-key',
      httpCode: 403,
    })
  })

  it('signs in a user with two-factor sign-in: Session.create with otp', async () => {
    const u = await makeUser(s)
    const session = await login(s, u.username, u.password)
    const headers = { 'X-ServiceAPI-Auth': session, 'Content-Type': 'application/json' }
    const api = `${s.api}/two_factor_authentication_methods`
    const created = (await (
      await fetch(api, { method: 'POST', headers, body: JSON.stringify({ method_type: 'totp' }) })
    ).json()) as { id: number; otpauth_uri: string }
    // Confirmed with the previous step's code (still inside the window), so the current one is unused.
    const confirm = await fetch(`${api}/${created.id}`, {
      method: 'PATCH',
      headers,
      body: JSON.stringify({ otp: codeAt(created.otpauth_uri, Date.now() - 30_000) }),
    })
    expect(confirm.status).toBe(200)

    expect(
      describeError(await sdkError(Session.create({ username: u.username, password: u.password }))),
    ).toEqual({
      className: 'NotAuthorized_TwoFactorAuthenticationRequiredError',
      type: 'not-authorized/two-factor-authentication-required',
      httpCode: 403,
    })
    const code = codeAt(created.otpauth_uri, Date.now())
    const wrong = code === '123456' ? '654321' : '123456'
    expect(
      describeError(
        await sdkError(Session.create({ username: u.username, password: u.password, otp: wrong })),
      ),
    ).toEqual({
      className: 'NotAuthenticated_OneTimePasswordIncorrectError',
      type: 'not-authenticated/one-time-password-incorrect',
      httpCode: 401,
    })
    const ok = await Session.create({ username: u.username, password: u.password, otp: code })
    expect(ok.id).toMatch(/^[0-9a-f]{64}$/)
    expect(JSON.parse(rec.requests.at(-1)!.body)).toMatchObject({ otp: code })
  })
})
