import { describe, expect, it } from 'vitest'
import { RateLimiter } from '../src/http/rate-limiter.js'
import {
  call,
  dialects,
  expectError,
  login,
  makeKey,
  makeUser,
  type TestServer,
  useServer,
  useServerEach,
} from './helpers/server.js'

const MINUTE = 60_000

const attempt = (s: TestServer, username: string, password: string, headers: Record<string, string> = {}) =>
  call(s, 'POST', '/sessions', { body: { username, password }, headers })

async function failedLogins(s: TestServer, username: string) {
  return s.container.db
    .selectFrom('actions')
    .selectAll()
    .where('action', '=', 'failedlogin')
    .where('username', '=', username)
    .orderBy('id')
    .execute()
}

/** Moves a user's failed-login history back in time, as if the attempts were made earlier. */
async function ageFailedLogins(s: TestServer, username: string, ms: number) {
  const rows = await failedLogins(s, username)
  for (const r of rows) {
    await s.container.db
      .updateTable('actions')
      .set({ created_at: r.created_at - ms })
      .where('id', '=', r.id)
      .execute()
  }
}

describe.each(dialects)('sessions (%s)', (dialect) => {
  const s = useServer(dialect)

  it('logs in, works with X-ServiceAPI-Auth, and logs out with an empty array', async () => {
    const u = await makeUser(s)
    const before = Date.now()
    const r = await attempt(s, u.username, u.password)
    expect(r.status).toBe(201)
    expect(Object.keys(r.body)).toEqual(['id', 'read_only'])
    expect(r.body.read_only).toBe(false)
    expect(typeof r.body.id).toBe('string')
    expect(r.body.id.length).toBeGreaterThanOrEqual(32)
    const session: string = r.body.id

    const user = await s.container.db
      .selectFrom('users')
      .selectAll()
      .where('id', '=', u.id)
      .executeTakeFirstOrThrow()
    expect(user.last_login_at).toBeGreaterThanOrEqual(before)
    const logins = await s.container.db
      .selectFrom('actions')
      .selectAll()
      .where('action', '=', 'login')
      .where('user_id', '=', u.id)
      .execute()
    expect(logins).toHaveLength(1)
    expect(logins[0]).toMatchObject({
      username: u.username,
      ip: '127.0.0.1',
      interface: 'restapi',
      failure_type: null,
    })
    // Only a hash of the session id is stored.
    const rows = await s.container.db.selectFrom('sessions').selectAll().execute()
    expect(JSON.stringify(rows)).not.toContain(session)

    const list = await call(s, 'GET', '/api_keys', { session })
    expect(list.status).toBe(200)
    expect(list.body).toEqual([])
    const alias = await call(s, 'GET', '/api_keys', { headers: { 'X-FilesAPI-Auth': session } })
    expect(alias.status).toBe(200)

    const out = await call(s, 'DELETE', '/sessions', { session })
    expect(out.status).toBe(200)
    expect(out.text).toBe('[]')
    expectError(
      await call(s, 'GET', '/api_keys', { session }),
      401,
      'not-authenticated/authentication-required',
    )
  })

  it("records a web interface session's login and actions as interface web", async () => {
    const u = await makeUser(s, { site_admin: true })
    const r = await call(s, 'POST', '/sessions', {
      body: { username: u.username, password: u.password },
      headers: { 'X-Wharf-Interface': 'web' },
    })
    expect(r.status).toBe(201)
    const made = await call(s, 'POST', `/folders/web-${dialect}`, { session: r.body.id })
    expect(made.status).toBe(201)
    const actions = await s.container.db
      .selectFrom('actions')
      .select(['action', 'interface'])
      .where('user_id', '=', u.id)
      .orderBy('id')
      .execute()
    expect(actions).toEqual([
      { action: 'login', interface: 'web' },
      { action: 'create', interface: 'web' },
    ])
    // Any other value of the header is an ordinary API login.
    const other = await call(s, 'POST', '/sessions', {
      body: { username: u.username, password: u.password },
      headers: { 'X-Wharf-Interface': 'desktop' },
    })
    expect(other.status).toBe(201)
    const last = await s.container.db
      .selectFrom('actions')
      .select('interface')
      .where('user_id', '=', u.id)
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow()
    expect(last.interface).toBe('restapi')
  })

  it('ends the sessions of a disabled user', async () => {
    const u = await makeUser(s)
    const session = await login(s, u.username, u.password)
    expect((await call(s, 'GET', '/api_keys', { session })).status).toBe(200)
    await s.container.db.updateTable('users').set({ disabled: 1 }).where('id', '=', u.id).execute()
    expectError(
      await call(s, 'GET', '/api_keys', { session }),
      401,
      'not-authenticated/authentication-required',
    )
    const again = await attempt(s, u.username, u.password)
    expectError(again, 401, 'not-authenticated/invalid-username-or-password')
    expect((await failedLogins(s, u.username)).map((r) => r.failure_type)).toEqual(['disabled'])
  })

  it('answers DELETE /sessions with an empty array whatever the session', async () => {
    for (const opts of [{}, { session: 'no-such-session' }, { session: 'x'.repeat(500) }]) {
      const r = await call(s, 'DELETE', '/sessions', opts)
      expect({ status: r.status, text: r.text }).toEqual({ status: 200, text: '[]' })
    }
    const xml = await call(s, 'DELETE', '/sessions.xml')
    expect(xml.status).toBe(200)
    expect(xml.text).toContain('<sessions type="array"/>')
    const accept = await call(s, 'DELETE', '/sessions', { accept: 'application/xml' })
    expect(accept.text).toContain('<sessions type="array"/>')
  })

  it('logs in with an XML body and answers in XML', async () => {
    const u = await makeUser(s)
    const r = await call(s, 'POST', '/sessions.xml', {
      raw: `<session><username>${u.username}</username><password>${u.password}</password></session>`,
      contentType: 'application/xml',
    })
    expect(r.status).toBe(201)
    const id = /<id>([^<]+)<\/id>/.exec(r.text)?.[1]
    expect(r.text).toContain('<session>')
    expect((await call(s, 'GET', '/api_keys', { session: id! })).status).toBe(200)
  })

  it('matches the username case-insensitively', async () => {
    const u = await makeUser(s, { username: `Carol-${dialect}` })
    expect((await attempt(s, u.username.toUpperCase(), u.password)).status).toBe(201)
  })

  it('refuses to log in while an API key is sent', async () => {
    const u = await makeUser(s)
    const k = await makeKey(s, u.id)
    expectError(
      await attempt(s, u.username, u.password, { 'X-ServiceAPI-Key': k.key }),
      403,
      'not-authorized/cannot-login-while-using-key',
    )
    expectError(
      await attempt(s, u.username, u.password, { 'X-FilesAPI-Key': k.key }),
      403,
      'not-authorized/cannot-login-while-using-key',
    )
    const basic = { Authorization: `Basic ${Buffer.from(`${k.key}:x`).toString('base64')}` }
    expectError(
      await attempt(s, u.username, u.password, basic),
      403,
      'not-authorized/cannot-login-while-using-key',
    )
    const rows = await s.container.db.selectFrom('actions').select('id').where('user_id', '=', u.id).execute()
    expect(rows).toHaveLength(0)
  })

  it('refuses bad login bodies with exact types', async () => {
    const post = (o: Parameters<typeof call>[3]) => call(s, 'POST', '/sessions', o)
    expectError(await post({ body: { username: 'a' } }), 400, 'bad-request/request-params-required')
    expectError(await post({ body: { password: 'a' } }), 400, 'bad-request/request-params-required')
    expectError(
      await post({ body: { username: 'a', password: 'b', remember: true } }),
      400,
      'bad-request/request-params-invalid',
    )
    expectError(
      await post({ body: { username: { a: 1 }, password: 'b' } }),
      400,
      'bad-request/request-params-invalid',
    )
    expectError(
      await post({ body: { username: 'u'.repeat(257), password: 'b' } }),
      400,
      'bad-request/request-params-invalid',
    )
    expectError(await post({ raw: '{"username":' }), 400, 'bad-request/invalid-body')
    expectError(
      await post({ raw: 'username=a', contentType: 'application/x-www-form-urlencoded' }),
      400,
      'bad-request/unsupported-media-type',
    )
  })

  it('answers 401 invalid-username-or-password and records why', async () => {
    const u = await makeUser(s)
    expectError(
      await attempt(s, u.username, 'wrong-password'),
      401,
      'not-authenticated/invalid-username-or-password',
    )
    const ghost = `ghost-${dialect}`
    expectError(await attempt(s, ghost, 'whatever'), 401, 'not-authenticated/invalid-username-or-password')

    const mismatch = await failedLogins(s, u.username)
    expect(mismatch).toHaveLength(1)
    expect(mismatch[0]).toMatchObject({
      user_id: u.id,
      failure_type: 'password_mismatch',
      ip: '127.0.0.1',
      interface: 'restapi',
    })
    const unknown = await failedLogins(s, ghost)
    expect(unknown).toHaveLength(1)
    expect(unknown[0]).toMatchObject({
      user_id: null,
      failure_type: 'username_not_found',
      ip: '127.0.0.1',
      interface: 'restapi',
    })
    const user = await s.container.db
      .selectFrom('users')
      .selectAll()
      .where('id', '=', u.id)
      .executeTakeFirstOrThrow()
    expect(user.last_login_at).toBeNull()
  })

  it('locks a user out after 5 failed logins, for 15 minutes', async () => {
    const u = await makeUser(s)
    for (let i = 0; i < 5; i++) {
      expectError(
        await attempt(s, u.username, `wrong-${i}`),
        401,
        'not-authenticated/invalid-username-or-password',
      )
    }
    const locked = await attempt(s, u.username, u.password)
    expectError(locked, 401, 'not-authenticated/locked-out')
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0)
    const types = (await failedLogins(s, u.username)).map((r) => r.failure_type)
    expect(types).toEqual([...Array(5).fill('password_mismatch'), 'locked_out'])
    expect(
      await s.container.db.selectFrom('sessions').select('id_hash').where('user_id', '=', u.id).execute(),
    ).toHaveLength(0)

    await ageFailedLogins(s, u.username, 10 * MINUTE)
    expectError(await attempt(s, u.username, u.password), 401, 'not-authenticated/locked-out')
    await ageFailedLogins(s, u.username, 6 * MINUTE)
    expect((await attempt(s, u.username, u.password)).status).toBe(201)
  })

  it('answers an unknown user name exactly as a real one, lock-out included', async () => {
    const u = await makeUser(s)
    const ghost = `Nobody-${dialect}-${u.id}`
    /** What a caller sees of one answer: everything but the unique instance id. */
    const seen = async (username: string, password: string) => {
      const r = await attempt(s, username, password)
      const { instance: _, ...body } = r.body
      return { status: r.status, body, retryAfter: r.headers.get('retry-after') !== null }
    }
    // Six wrong passwords then the right one for the real user; the same for a made-up name,
    // typed in varying case as an attacker might.
    const real: unknown[] = []
    const unknown: unknown[] = []
    for (let i = 0; i < 7; i++) {
      real.push(await seen(u.username, i === 6 ? u.password : `wrong-${i}`))
      unknown.push(await seen(i % 2 ? ghost.toLowerCase() : ghost.toUpperCase(), `wrong-${i}`))
    }
    expect(unknown).toEqual(real)
    expect((real[4] as any).body.type).toBe('not-authenticated/invalid-username-or-password')
    expect((real[5] as any).body.type).toBe('not-authenticated/locked-out')
    expect((real[5] as any).retryAfter).toBe(true)

    // The history keeps the truth for site admins: the name was not found, every time.
    const recorded = await failedLogins(s, ghost.toLowerCase())
    expect(recorded.map((r) => [r.user_id, r.failure_type])).toEqual(
      Array(7).fill([null, 'username_not_found']),
    )
    // The lock lifts after the window, as a real user's does.
    await ageFailedLogins(s, ghost.toLowerCase(), 16 * MINUTE)
    expectError(await attempt(s, ghost, 'again'), 401, 'not-authenticated/invalid-username-or-password')
  })

  it('forgets earlier failures after a successful login', async () => {
    const u = await makeUser(s)
    for (let i = 0; i < 4; i++) expect((await attempt(s, u.username, 'wrong')).status).toBe(401)
    expect((await attempt(s, u.username, u.password)).status).toBe(201)
    for (let i = 0; i < 4; i++) {
      expectError(
        await attempt(s, u.username, 'wrong'),
        401,
        'not-authenticated/invalid-username-or-password',
      )
    }
    expect((await attempt(s, u.username, u.password)).status).toBe(201)
    const types = (await failedLogins(s, u.username)).map((r) => r.failure_type)
    expect(types).toEqual(Array(8).fill('password_mismatch'))
  })

  it('does not lock a user for failures older than the window', async () => {
    const u = await makeUser(s)
    for (let i = 0; i < 3; i++) expect((await attempt(s, u.username, 'wrong')).status).toBe(401)
    await ageFailedLogins(s, u.username, 16 * MINUTE)
    for (let i = 0; i < 2; i++) expect((await attempt(s, u.username, 'wrong')).status).toBe(401)
    expect((await attempt(s, u.username, u.password)).status).toBe(201)
  })
})

describe.each(dialects)('session limits (%s)', (dialect) => {
  const s = useServerEach(dialect, { SESSION_IDLE_MINUTES: '5' })

  it('ends a session idle for longer than SESSION_IDLE_MINUTES', async () => {
    const u = await makeUser(s)
    const session = await login(s, u.username, u.password)
    const setIdle = (ms: number) =>
      s.container.db
        .updateTable('sessions')
        .set({ last_active_at: Date.now() - ms })
        .where('user_id', '=', u.id)
        .execute()
    const row = () =>
      s.container.db.selectFrom('sessions').selectAll().where('user_id', '=', u.id).executeTakeFirst()

    await setIdle(4 * MINUTE)
    const before = Date.now()
    expect((await call(s, 'GET', '/api_keys', { session })).status).toBe(200)
    expect((await row())!.last_active_at).toBeGreaterThanOrEqual(before)

    await setIdle(5 * MINUTE + 5000)
    expectError(
      await call(s, 'GET', '/api_keys', { session }),
      401,
      'not-authenticated/authentication-required',
    )
    expect(await row()).toBeUndefined()
  })

  it('clears sessions nobody came back to when anyone logs in', async () => {
    const gone = await makeUser(s)
    const kept = await makeUser(s)
    await login(s, gone.username, gone.password)
    await login(s, kept.username, kept.password)
    await s.container.db
      .updateTable('sessions')
      .set({ last_active_at: Date.now() - 6 * MINUTE })
      .where('user_id', '=', gone.id)
      .execute()
    const count = async (userId: number) =>
      (await s.container.db.selectFrom('sessions').select('id_hash').where('user_id', '=', userId).execute())
        .length
    expect(await count(gone.id)).toBe(1)
    await login(s, kept.username, kept.password)
    expect(await count(gone.id)).toBe(0)
    expect(await count(kept.id)).toBe(2)
  })
})

describe.each(dialects)('request rate limits (%s)', (dialect) => {
  let clock: number
  const s = useServer(dialect, {
    RATE_LIMIT_PER_SECOND: '1',
    RATE_LIMIT_BURST: '3',
    RATE_LIMIT_CONCURRENT: '1',
  })

  /** A fresh limiter on a frozen clock: "quick" requests are quick however slow the machine. */
  function freezeClock() {
    clock = 1_000_000
    s.container.rateLimiter = new RateLimiter(s.container.config.rateLimit, () => clock)
  }

  it('allows a burst, then answers 429 too-many-requests per key, and refills', async () => {
    freezeClock()
    const u = await makeUser(s)
    const a = await makeKey(s, u.id)
    const b = await makeKey(s, u.id)
    for (let i = 0; i < 3; i++) expect((await call(s, 'GET', '/api_key', { key: a.key })).status).toBe(200)
    const limited = await call(s, 'GET', '/api_key', { key: a.key })
    expectError(limited, 429, 'rate-limited/too-many-requests')
    expect(limited.headers.get('retry-after')).toBe('1')
    expect((await call(s, 'GET', '/api_key', { key: b.key })).status).toBe(200)

    clock += 1000
    expect((await call(s, 'GET', '/api_key', { key: a.key })).status).toBe(200)
    expectError(await call(s, 'GET', '/api_key', { key: a.key }), 429, 'rate-limited/too-many-requests')
  })

  it('takes a clock stepped back as no time passing, and refills from the new time', async () => {
    freezeClock()
    const u = await makeUser(s)
    const a = await makeKey(s, u.id)
    for (let i = 0; i < 3; i++) expect((await call(s, 'GET', '/api_key', { key: a.key })).status).toBe(200)
    clock -= 3_600_000
    expectError(await call(s, 'GET', '/api_key', { key: a.key }), 429, 'rate-limited/too-many-requests')
    clock += 1000
    expect((await call(s, 'GET', '/api_key', { key: a.key })).status).toBe(200)
  })

  it('limits a session on its own', async () => {
    freezeClock()
    const u = await makeUser(s)
    const session = await login(s, u.username, u.password)
    const k = await makeKey(s, u.id)
    for (let i = 0; i < 3; i++) expect((await call(s, 'GET', '/api_keys', { session })).status).toBe(200)
    expectError(await call(s, 'GET', '/api_keys', { session }), 429, 'rate-limited/too-many-requests')
    expect((await call(s, 'GET', '/api_keys', { key: k.key })).status).toBe(200)
  })

  it('answers 429 too-many-concurrent-requests beyond RATE_LIMIT_CONCURRENT', async () => {
    freezeClock()
    const u = await makeUser(s)
    const k = await makeKey(s, u.id)
    const other = await makeKey(s, u.id)
    const svc = s.container.services.apiKeys
    const original = svc.getCurrent
    let entered!: () => void
    let release!: () => void
    const inHandler = new Promise<void>((r) => {
      entered = r
    })
    const gate = new Promise<void>((r) => {
      release = r
    })
    let held = true
    svc.getCurrent = async (p) => {
      if (held) {
        held = false
        entered()
        await gate
      }
      return original.call(svc, p)
    }
    try {
      const first = call(s, 'GET', '/api_key', { key: k.key })
      await inHandler
      const second = await call(s, 'GET', '/api_key', { key: k.key })
      expectError(second, 429, 'rate-limited/too-many-concurrent-requests')
      expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(0)
      expect((await call(s, 'GET', '/api_key', { key: other.key })).status).toBe(200)
      release()
      expect((await first).status).toBe(200)
      // The finished request gave its place back.
      expect((await call(s, 'GET', '/api_key', { key: k.key })).status).toBe(200)
    } finally {
      release()
      svc.getCurrent = original
    }
  })
})
