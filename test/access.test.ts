import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { operatorPrincipal } from '../src/identity/principal.js'
import { runClient } from './helpers/dav.js'
import { run, startSftpAndFtpServer } from './helpers/ftp.js'
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  call,
  dialects,
  expectError,
  grant,
  makeKey,
  makeUser,
  type TestServer,
  type TestUser,
  useServer,
  useStarted,
} from './helpers/server.js'
import { sftpBatch, sftpBatchWithKey, sshKeyPair } from './helpers/sftp.js'

type World = TestServer & { ftpPort: number; sftp: { port: number } }

/** Per-user and per-group rights, address limits and the end of access, at every way in. */
describe.each(dialects)('access rights and address limits (%s)', (dialect) => {
  // Refusals from 127.0.0.1 are scored; a high threshold keeps the address unbanned meanwhile.
  const w = useStarted(`${dialect} every-protocol server`, () =>
    startSftpAndFtpServer(dialect, { LOGIN_DEFENDER_THRESHOLD: '100000' }),
  ) as unknown as World
  let dir: string
  let strangerFile: string

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-access-'))
    strangerFile = path.join(dir, 'stranger')
    await fs.writeFile(strangerFile, sshKeyPair().private, { mode: 0o600 })
    await w.container.services.folders.mkdir(operatorPrincipal(w.container.site.id), 'box', {})
  })
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true })
  })

  /** A user with a folder, changed through PATCH /users as a site admin. */
  async function user(fields: Record<string, unknown> = {}): Promise<TestUser> {
    const u = await makeUser(w)
    await grant(w, u.id, 'box', 'full')
    if (Object.keys(fields).length) {
      const r = await call(w, 'PATCH', `/users/${u.id}`, { key: w.adminKey, body: fields })
      expect(r.status, r.text).toBe(200)
    }
    return u
  }

  /**
   * The failure types of the user's failed logins, oldest first, as GET /history/login lists
   * them, each run of the same type once (lftp logs in a second time after a refusal).
   */
  async function failures(u: { username: string }, { raw = false } = {}): Promise<string[]> {
    const r = await call(w, 'GET', '/history/login?per_page=1000', { key: w.adminKey })
    expect(r.status, r.text).toBe(200)
    return (r.body as { action: string; username: string; failure_type: string; id: number }[])
      .filter((a) => a.action === 'failedlogin' && a.username === u.username)
      .sort((a, b) => a.id - b.id)
      .map((a) => a.failure_type)
      .filter((t, i, all) => raw || i === 0 || all[i - 1] !== t)
  }

  const rest = (u: TestUser, web = false) =>
    call(w, 'POST', '/sessions', {
      body: { username: u.username, password: u.password },
      ...(web ? { headers: { 'X-Wharf-Interface': 'web' } } : {}),
    })
  const sftp = (u: TestUser) => sftpBatch(w.sftp.port, u.username, u.password, ['ls /'], { onePrompt: true })
  const sftpKey = (u: { username: string }, file: string) =>
    sftpBatchWithKey(w.sftp.port, u.username, file, ['ls /'])
  const ftp = (u: TestUser) =>
    run('lftp', [
      '-e',
      'set net:max-retries 1; set net:reconnect-interval-base 1; set ftp:ssl-allow no; cls /; bye',
      '-u',
      `${u.username},${u.password}`,
      `ftp://127.0.0.1:${w.ftpPort}`,
    ])
  /** curl PROPFIND on /dav/: the HTTP status. */
  const dav = async (u: { username: string; password: string }) => {
    const r = await runClient('curl', [
      '-s',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '-X',
      'PROPFIND',
      '-H',
      'Depth: 1',
      '-u',
      `${u.username}:${u.password}`,
      `${w.url}/dav/`,
    ])
    return Number(r.stdout)
  }

  /** Registers a new key pair for the user: the private key's file. */
  async function addKey(u: TestUser): Promise<string> {
    const pair = sshKeyPair()
    const file = path.join(dir, `id-${u.id}`)
    await fs.writeFile(file, pair.private, { mode: 0o600 })
    const r = await call(w, 'POST', '/public_keys', {
      key: w.adminKey,
      body: { title: 'k', public_key: pair.public, user_id: u.id },
    })
    expect(r.status, r.text).toBe(201)
    return file
  }

  it('shows the new fields on users, takes them on create and update, and checks allowed_ips', async () => {
    const created = await call(w, 'POST', '/users', {
      key: w.adminKey,
      body: {
        username: 'partner-one',
        ftp_permission: false,
        dav_permission: false,
        allowed_ips: ' 10.0.0.0/8\n\n2001:db8::/32 \n192.0.2.7',
        authenticate_until: '2030-01-02T03:04:05Z',
        billing_permission: true,
      },
    })
    expect(created.status, created.text).toBe(201)
    expect(created.body).toMatchObject({
      ftp_permission: false,
      sftp_permission: true,
      dav_permission: false,
      restapi_permission: true,
      allowed_ips: '10.0.0.0/8\n2001:db8::/32\n192.0.2.7',
      authenticate_until: '2030-01-02T03:04:05Z',
      billing_permission: true,
    })
    const listed = await call(w, 'GET', '/users?per_page=1000', { key: w.adminKey })
    expect(listed.body.find((u: { id: number }) => u.id === created.body.id)).toMatchObject({
      ftp_permission: false,
      allowed_ips: '10.0.0.0/8\n2001:db8::/32\n192.0.2.7',
    })
    const plain = await call(w, 'POST', '/users', { key: w.adminKey, body: { username: 'partner-two' } })
    expect(plain.body).toMatchObject({
      ftp_permission: true,
      sftp_permission: true,
      dav_permission: true,
      restapi_permission: true,
      allowed_ips: null,
      authenticate_until: null,
      billing_permission: false,
    })

    const patched = await call(w, 'PATCH', `/users/${created.body.id}`, {
      key: w.adminKey,
      body: { ftp_permission: true, allowed_ips: '', authenticate_until: null, restapi_permission: false },
    })
    expect(patched.status, patched.text).toBe(200)
    expect(patched.body).toMatchObject({
      ftp_permission: true,
      restapi_permission: false,
      allowed_ips: null,
      authenticate_until: null,
    })

    for (const bad of [
      '10.0.0.0/33',
      'example.com',
      '10.0.0.1-10.0.0.9',
      '1.2.3',
      '::1/129',
      '10.0.0.0/8 foo',
    ]) {
      const r = await call(w, 'PATCH', `/users/${created.body.id}`, {
        key: w.adminKey,
        body: { allowed_ips: bad },
      })
      expectError(r, 422, 'processing-failure/model-save-error')
      expect(r.text).toContain('allowed_ips')
    }
    const badCreate = await call(w, 'POST', '/users', {
      key: w.adminKey,
      body: { username: 'partner-three', allowed_ips: '300.1.1.1' },
    })
    expectError(badCreate, 422, 'processing-failure/model-save-error')
    expect(badCreate.body.errors ?? badCreate.body['model_errors'] ?? badCreate.text).toBeTruthy()
    expect(badCreate.text).toContain('allowed_ips')
    expectError(
      await call(w, 'PATCH', `/users/${created.body.id}`, {
        key: w.adminKey,
        body: { authenticate_until: 'next tuesday' },
      }),
      400,
      'bad-request/datetime-parse',
    )
  })

  it('takes the fields in XML too', async () => {
    const r = await call(w, 'POST', '/users', {
      key: w.adminKey,
      accept: 'application/xml',
      contentType: 'application/xml',
      raw: '<user><username>xml-partner</username><sftp_permission>false</sftp_permission><allowed_ips>127.0.0.1/32</allowed_ips></user>',
    })
    expect(r.status, r.text).toBe(201)
    expect(r.text).toContain('<sftp_permission type="boolean">false</sftp_permission>')
    expect(r.text).toContain('<ftp_permission type="boolean">true</ftp_permission>')
    expect(r.text).toContain('<allowed_ips>127.0.0.1/32</allowed_ips>')
  })

  it('lets a user change none of their own access fields, but passes them back unchanged', async () => {
    const u = await user({ allowed_ips: '127.0.0.1', authenticate_until: '2099-01-01T00:00:00Z' })
    const { key } = await makeKey(w, u.id)
    const me = await call(w, 'GET', '/user', { key })
    expect(me.status, me.text).toBe(200)
    const echoed = await call(w, 'PATCH', `/users/${u.id}`, { key, body: { ...me.body, name: 'Me' } })
    expect(echoed.status, echoed.text).toBe(200)
    for (const body of [
      { ftp_permission: false },
      { allowed_ips: '' },
      { authenticate_until: '2100-01-01T00:00:00Z' },
      { billing_permission: true },
    ]) {
      expectError(
        await call(w, 'PATCH', `/users/${u.id}`, { key, body }),
        403,
        'not-authorized/site-admin-required',
      )
    }
  })

  it('keeps a site admin from locking themselves out', async () => {
    const a = await makeUser(w, { site_admin: true })
    const { key } = await makeKey(w, a.id)
    for (const [body, field] of [
      [{ restapi_permission: false }, 'restapi_permission'],
      [{ allowed_ips: '127.0.0.2/32' }, 'allowed_ips'],
      [{ authenticate_until: '2001-01-01T00:00:00Z' }, 'authenticate_until'],
    ] as const) {
      const r = await call(w, 'PATCH', `/users/${a.id}`, { key, body })
      expectError(r, 422, 'processing-failure/model-save-error')
      expect(r.text).toContain(field)
    }
    const ok = await call(w, 'PATCH', `/users/${a.id}`, { key, body: { allowed_ips: '127.0.0.0/8\n::1' } })
    expect(ok.status, ok.text).toBe(200)
  })

  it('checks a group’s allowed_ips and shows its rights', async () => {
    const bad = await call(w, 'POST', '/groups', {
      key: w.adminKey,
      body: { name: 'bad-ips', allowed_ips: 'nope' },
    })
    expectError(bad, 422, 'processing-failure/model-save-error')
    expect(bad.text).toContain('allowed_ips')
    const g = await call(w, 'POST', '/groups', {
      key: w.adminKey,
      body: { name: 'good-ips', allowed_ips: '192.0.2.0/24\n 2001:db8::1 ', ftp_permission: false },
    })
    expect(g.status, g.text).toBe(201)
    expect(g.body).toMatchObject({ allowed_ips: '192.0.2.0/24\n2001:db8::1', ftp_permission: false })
    const badPatch = await call(w, 'PATCH', `/groups/${g.body.id}`, {
      key: w.adminKey,
      body: { allowed_ips: '192.0.2.0/24\n10.0.0.0/99' },
    })
    expectError(badPatch, 422, 'processing-failure/model-save-error')
  })

  it('shows and changes the site’s allowed_ips (site admins), never shutting out the caller', async () => {
    expect((await call(w, 'GET', '/site', { key: w.adminKey })).body).toMatchObject({
      name: expect.any(String),
      allowed_ips: null,
      password_min_length: 8,
    })
    // A refused list leaves the other fields of the same request unsaved.
    const mixed = await call(w, 'PATCH', '/site', {
      key: w.adminKey,
      body: { password_min_length: 12, allowed_ips: '127.0.0.2/32' },
    })
    expectError(mixed, 422, 'processing-failure/model-save-error')
    expect((await call(w, 'GET', '/site', { key: w.adminKey })).body.password_min_length).toBe(8)
    const u = await user()
    const { key } = await makeKey(w, u.id)
    // Others read the site's rules, not its address limits.
    const shown = await call(w, 'GET', '/site', { key })
    expect(shown.status, shown.text).toBe(200)
    expect(shown.body).not.toHaveProperty('allowed_ips')
    expectError(
      await call(w, 'PATCH', '/site', { key, body: { allowed_ips: '127.0.0.1' } }),
      403,
      'not-authorized/site-admin-required',
    )
    const locked = await call(w, 'PATCH', '/site', { key: w.adminKey, body: { allowed_ips: '127.0.0.2/32' } })
    expectError(locked, 422, 'processing-failure/model-save-error')
    expect(locked.text).toContain('allowed_ips')
    expectError(
      await call(w, 'PATCH', '/site', { key: w.adminKey, body: { allowed_ips: 'x' } }),
      422,
      'processing-failure/model-save-error',
    )
    const set = await call(w, 'PATCH', '/site', {
      key: w.adminKey,
      body: { allowed_ips: '127.0.0.0/8\n::1' },
    })
    expect(set.status, set.text).toBe(200)
    expect(set.body.allowed_ips).toBe('127.0.0.0/8\n::1')
    const xml = await call(w, 'GET', '/site', { key: w.adminKey, accept: 'application/xml' })
    expect(xml.text).toContain('<allowed_ips>127.0.0.0/8\n::1</allowed_ips>')
    const cleared = await call(w, 'PATCH', '/site', { key: w.adminKey, body: { allowed_ips: null } })
    expect(cleared.body.allowed_ips).toBeNull()
  })

  it('refuses each protocol whose right the user lacks, as a wrong password, with the exact failure type', async () => {
    const noRest = await user({ restapi_permission: false })
    expectError(await rest(noRest), 401, 'not-authenticated/invalid-username-or-password')
    expectError(await rest(noRest, true), 401, 'not-authenticated/invalid-username-or-password')
    const { key } = await makeKey(w, noRest.id)
    expectError(await call(w, 'GET', '/user', { key }), 401, 'not-authenticated/authentication-required')
    expect(await failures(noRest)).toEqual([
      'no_restapi_permission',
      'no_web_permission',
      'no_restapi_permission',
    ])

    const noSftp = await user({ sftp_permission: false })
    expect((await sftp(noSftp)).code).not.toBe(0)
    const noSftpKey = await addKey(noSftp)
    expect((await sftpKey(noSftp, noSftpKey)).code).not.toBe(0)
    expect(await failures(noSftp, { raw: true })).toEqual(['no_sftp_permission', 'no_sftp_permission'])
    // The other ways in still work.
    expect((await rest(noSftp)).status).toBe(201)
    expect((await ftp(noSftp)).code).toBe(0)

    const noFtp = await user({ ftp_permission: false })
    const refused = await ftp(noFtp)
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain('Login incorrect')
    expect(await failures(noFtp)).toEqual(['no_ftp_permission'])
    expect((await sftp(noFtp)).code).toBe(0)

    const noDav = await user({ dav_permission: false })
    expect(await dav(noDav)).toBe(401)
    // An API key as the password is refused the same way.
    const davKey = await makeKey(w, noDav.id)
    expect(await dav({ username: noDav.username, password: davKey.key })).toBe(401)
    expect(await failures(noDav, { raw: true })).toEqual(['no_dav_permission', 'no_dav_permission'])
    expect((await ftp(noDav)).code).toBe(0)
  })

  it('answers a refused login exactly as a wrong password', async () => {
    const u = await user({ restapi_permission: false })
    const refused = await rest(u)
    const wrong = await call(w, 'POST', '/sessions', {
      body: { username: u.username, password: 'not-it-at-all' },
    })
    expect(refused.status).toBe(wrong.status)
    expect({ ...refused.body, instance: '' }).toEqual({ ...wrong.body, instance: '' })
  })

  it('lets every protocol in with all rights from an allowed address', async () => {
    const u = await user({ allowed_ips: '127.0.0.1/32' })
    const keyFile = await addKey(u)
    expect((await rest(u)).status).toBe(201)
    expect((await rest(u, true)).status).toBe(201)
    const { key } = await makeKey(w, u.id)
    expect((await call(w, 'GET', '/user', { key })).status).toBe(200)
    expect((await sftp(u)).code).toBe(0)
    expect((await sftpKey(u, keyFile)).code).toBe(0)
    expect((await ftp(u)).code).toBe(0)
    expect(await dav(u)).toBe(207)
    expect(await failures(u)).toEqual([])
  })

  it('refuses a login from outside the user’s allowed_ips with ip_mismatch on every protocol', async () => {
    const u = await user({ allowed_ips: '127.0.0.2/32\n2001:db8::/32' })
    const keyFile = await addKey(u)
    expectError(await rest(u), 401, 'not-authenticated/invalid-username-or-password')
    const { key } = await makeKey(w, u.id)
    expectError(await call(w, 'GET', '/user', { key }), 401, 'not-authenticated/authentication-required')
    expect((await sftp(u)).code).not.toBe(0)
    expect((await sftpKey(u, keyFile)).code).not.toBe(0)
    expect((await ftp(u)).code).not.toBe(0)
    expect(await dav(u)).toBe(401)
    expect(await failures(u)).toEqual(['ip_mismatch'])
    // One for each of the six logins (lftp's second try is one more).
    expect((await failures(u, { raw: true })).length).toBeGreaterThanOrEqual(6)
  })

  it('applies the site’s and the groups’ allowed_ips too', async () => {
    const u = await user()
    const g = await call(w, 'POST', '/groups', {
      key: w.adminKey,
      body: { name: `far-${u.id}`, allowed_ips: '127.0.0.2', user_ids: String(u.id) },
    })
    expect(g.status, g.text).toBe(201)
    expectError(await rest(u), 401, 'not-authenticated/invalid-username-or-password')
    expect((await sftp(u)).code).not.toBe(0)
    const widened = await call(w, 'PATCH', `/groups/${g.body.id}`, {
      key: w.adminKey,
      body: { allowed_ips: '127.0.0.0/8' },
    })
    expect(widened.status, widened.text).toBe(200)
    expect((await rest(u)).status).toBe(201)

    // The site's list: the admin's own address stays inside; a user's narrower list still applies.
    const v = await user({ allowed_ips: '127.0.0.1' })
    expect(
      (await call(w, 'PATCH', '/site', { key: w.adminKey, body: { allowed_ips: '127.0.0.1/32\n::1' } }))
        .status,
    ).toBe(200)
    try {
      expect((await rest(v)).status).toBe(201)
      expect(
        (await call(w, 'PATCH', `/users/${v.id}`, { key: w.adminKey, body: { allowed_ips: '10.1.0.0/16' } }))
          .status,
      ).toBe(200)
      expectError(await rest(v), 401, 'not-authenticated/invalid-username-or-password')
    } finally {
      await call(w, 'PATCH', '/site', { key: w.adminKey, body: { allowed_ips: '' } })
    }
    expect(await failures(u)).toEqual(['ip_mismatch'])
    expect(await failures(v)).toEqual(['ip_mismatch'])
  })

  it('lets a group take a right away from its members', async () => {
    const u = await user()
    const g = await call(w, 'POST', '/groups', {
      key: w.adminKey,
      body: {
        name: `partners-${u.id}`,
        ftp_permission: false,
        dav_permission: false,
        restapi_permission: false,
        sftp_permission: true,
      },
    })
    expect(g.status, g.text).toBe(201)
    const member = await call(w, 'POST', '/group_users', {
      key: w.adminKey,
      body: { group_id: g.body.id, user_id: u.id },
    })
    expect(member.status, member.text).toBe(201)
    expect((await sftp(u)).code).toBe(0)
    expect((await ftp(u)).code).not.toBe(0)
    expect(await dav(u)).toBe(401)
    expectError(await rest(u), 401, 'not-authenticated/invalid-username-or-password')
    expect(await failures(u)).toEqual(['no_ftp_permission', 'no_dav_permission', 'no_restapi_permission'])
    // Out of the group, the user's own rights apply again.
    expect(
      (
        await call(w, 'DELETE', `/group_users/${member.body.id}`, {
          key: w.adminKey,
          body: { group_id: g.body.id, user_id: u.id },
        })
      ).status,
    ).toBe(204)
    expect((await ftp(u)).code).toBe(0)
  })

  it('ends access at authenticate_until', async () => {
    const u = await user({ authenticate_until: '2001-02-03T04:05:06Z' })
    const keyFile = await addKey(u)
    expectError(await rest(u), 401, 'not-authenticated/invalid-username-or-password')
    expect((await sftp(u)).code).not.toBe(0)
    expect((await sftpKey(u, keyFile)).code).not.toBe(0)
    expect((await ftp(u)).code).not.toBe(0)
    expect(await dav(u)).toBe(401)
    const { key } = await makeKey(w, u.id)
    expectError(await call(w, 'GET', '/user', { key }), 401, 'not-authenticated/authentication-required')
    expect(await failures(u)).toEqual(['expired_access'])
    expect((await failures(u, { raw: true })).length).toBeGreaterThanOrEqual(6)
    // A session opened before the end stops working once access has ended.
    const v = await user({ authenticate_until: '2099-01-01T00:00:00Z' })
    const session = (await rest(v)).body.id as string
    expect((await call(w, 'GET', '/user', { session })).status).toBe(200)
    await call(w, 'PATCH', `/users/${v.id}`, { key: w.adminKey, body: { authenticate_until: '2001-01-01' } })
    expectError(await call(w, 'GET', '/user', { session }), 401, 'not-authenticated/authentication-required')
  })

  it('records an SFTP login with only an unknown key as key_mismatch, and scores every refusal', async () => {
    const u = await user()
    await addKey(u)
    expect((await sftpKey(u, strangerFile)).code).not.toBe(0)
    await expect.poll(() => failures(u), { timeout: 10_000 }).toEqual(['key_mismatch'])
    const nobody = { username: `nobody-${u.id}`, password: 'x', id: 0 }
    expect((await sftpKey(nobody, strangerFile)).code).not.toBe(0)
    await expect
      .poll(() => failures({ username: nobody.username }), { timeout: 10_000 })
      .toEqual(['username_not_found'])

    const kinds = await w.container.db.selectFrom('login_failures').select('kind').execute()
    const scored = new Set(kinds.map((k) => k.kind))
    for (const kind of [
      'key_mismatch',
      'no_ftp_permission',
      'no_sftp_permission',
      'no_dav_permission',
      'no_restapi_permission',
      'no_web_permission',
      'ip_mismatch',
      'expired_access',
    ]) {
      expect(scored, kind).toContain(kind)
    }
  })
})

describe.each(dialects)('refused logins and the login defender (%s)', (dialect) => {
  const s = useServer(dialect, { LOGIN_DEFENDER_THRESHOLD: '3' })

  it('bans an address whose refused logins reach the threshold', async () => {
    const u = await makeUser(s)
    expect(
      (await call(s, 'PATCH', `/users/${u.id}`, { key: s.adminKey, body: { restapi_permission: false } }))
        .status,
    ).toBe(200)
    const { key } = await makeKey(s, u.id)
    const login = () => call(s, 'POST', '/sessions', { body: { username: u.username, password: u.password } })
    expectError(await login(), 401, 'not-authenticated/invalid-username-or-password')
    expectError(await call(s, 'GET', '/user', { key }), 401, 'not-authenticated/authentication-required')
    expectError(await login(), 401, 'not-authenticated/invalid-username-or-password')
    // The third refusal banned the address: even the site admin's right password is refused now.
    expectError(
      await call(s, 'POST', '/sessions', { body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD } }),
      429,
      'rate-limited/too-many-login-attempts',
    )
  })
})
