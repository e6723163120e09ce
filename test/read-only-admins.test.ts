import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { basic, dav } from './helpers/dav.js'
import { uploaded } from './helpers/files.js'
import { call, dialects, expectError, login, makeKey, makeUser, type TestUser } from './helpers/server.js'
import { sftpBatch, useSftpServer } from './helpers/sftp.js'

const READ_ONLY = 'not-authorized/read-only-session'

/**
 * Read-only site administrators: they read what a site admin reads, and their sessions and API
 * keys change nothing, over REST, the web interface's sessions and SFTP.
 */
describe.each(dialects)('read-only site administrators (%s)', (dialect) => {
  const s = useSftpServer(dialect)
  let auditor: TestUser
  let plain: TestUser
  let dir: string

  /** A read-only site admin, made through POST /users by a site admin. */
  async function readOnlyAdmin(extra: Record<string, unknown> = {}): Promise<TestUser> {
    const username = `ro-${Math.random().toString(36).slice(2, 10)}`
    const password = 'auditor-password-1'
    const r = await call(s, 'POST', '/users', {
      key: s.adminKey,
      body: { username, password, readonly_site_admin: true, ...extra },
    })
    expect(r.status, r.text).toBe(201)
    return { id: r.body.id, username, password }
  }

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-read-only-'))
    await uploaded(s, 'reports/q1.txt', 'quarter one')
    auditor = await readOnlyAdmin()
    plain = await makeUser(s)
  })
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true })
  })

  it('shows readonly_site_admin on users (JSON and XML) and lets only site admins set it', async () => {
    const shown = await call(s, 'GET', `/users/${auditor.id}`, { key: s.adminKey })
    expect(shown.body).toMatchObject({ readonly_site_admin: true, site_admin: false })
    const xml = await call(s, 'GET', `/users/${auditor.id}.xml`, { key: s.adminKey })
    expect(xml.text).toContain('<readonly_site_admin type="boolean">true</readonly_site_admin>')
    expect((await call(s, 'GET', `/users/${plain.id}`, { key: s.adminKey })).body.readonly_site_admin).toBe(
      false,
    )

    const u = await makeUser(s)
    const on = await call(s, 'PATCH', `/users/${u.id}`, {
      key: s.adminKey,
      body: { readonly_site_admin: true },
    })
    expect(on.status, on.text).toBe(200)
    expect(on.body.readonly_site_admin).toBe(true)
    const off = await call(s, 'PATCH', `/users/${u.id}`, {
      key: s.adminKey,
      body: { readonly_site_admin: false },
    })
    expect(off.body.readonly_site_admin).toBe(false)
    // A user who is not a site admin cannot make themselves one.
    const ownKey = (await makeKey(s, u.id)).key
    expectError(
      await call(s, 'PATCH', `/users/${u.id}`, { key: ownKey, body: { readonly_site_admin: true } }),
      403,
      'not-authorized/site-admin-required',
    )
    expectError(
      await call(s, 'POST', '/users', {
        key: s.adminKey,
        body: { username: 'x-ro', readonly_site_admin: 'yes' },
      }),
      400,
      'bad-request/request-params-invalid',
    )
  })

  it('signs them in to a read-only session that reads what a site admin reads', async () => {
    const r = await call(s, 'POST', '/sessions', {
      body: { username: auditor.username, password: auditor.password },
    })
    expect(r.status).toBe(201)
    expect(r.body.read_only).toBe(true)
    const session = r.body.id as string
    expect((await call(s, 'GET', '/site', { session })).body.session).toEqual({
      two_factor_setup_needed: false,
      read_only: true,
    })
    const users = await call(s, 'GET', '/users?per_page=1000', { session })
    expect(users.status).toBe(200)
    expect(users.body.map((u: { id: number }) => u.id)).toEqual(
      expect.arrayContaining([plain.id, auditor.id]),
    )
    expect((await call(s, 'GET', `/users/${plain.id}`, { session })).status).toBe(200)
    for (const p of [
      '/groups',
      '/permissions',
      '/history',
      '/history/login',
      '/webhook_settings',
      '/webhook_endpoints',
      '/api_keys',
      '/folders/reports',
      '/files/reports/q1.txt',
    ]) {
      const read = await call(s, 'GET', p, { session })
      expect(read.status, `${p}: ${read.text}`).toBe(200)
    }
    // Every file is theirs to download, and the listing says they may only read and list.
    const file = await call(s, 'GET', '/files/reports/q1.txt', { session })
    expect(await (await fetch(file.body.download_uri)).text()).toBe('quarter one')
    expect(file.body.permissions).toBe('rl')
    const bytes = await call(s, 'POST', '/resources/download', { session, body: { path: 'reports/q1.txt' } })
    expect([bytes.status, bytes.text]).toEqual([200, 'quarter one'])
    // Other users' sessions are not read-only.
    const other = await call(s, 'POST', '/sessions', {
      body: { username: plain.username, password: plain.password },
    })
    expect(other.body.read_only).toBe(false)
  })

  it('refuses every change of their sessions and API keys with 403 read-only-session', async () => {
    const session = await login(s, auditor.username, auditor.password)
    const web = await call(s, 'POST', '/sessions', {
      body: { username: auditor.username, password: auditor.password },
      headers: { 'X-Wharf-Interface': 'web' },
    })
    const key = (await makeKey(s, auditor.id)).key
    const changes: [string, string, unknown][] = [
      ['POST', '/users', { username: 'made-by-auditor', password: 'made-password-1' }],
      ['PATCH', `/users/${plain.id}`, { name: 'Changed' }],
      ['DELETE', `/users/${plain.id}`, undefined],
      ['POST', '/groups', { name: 'auditors' }],
      ['PATCH', '/site', { password_min_length: 12 }],
      ['PATCH', '/webhook_settings', { enabled: false }],
      ['POST', '/api_keys', { name: 'mine' }],
      ['POST', '/permissions', { path: 'reports', user_id: plain.id, permission: 'full' }],
      ['POST', '/folders/new-folder', {}],
      ['POST', '/file_actions/begin_upload/reports/q2.txt', {}],
      ['POST', '/file_actions/copy/reports/q1.txt', { destination: 'reports/copy.txt' }],
      ['POST', '/file_actions/move/reports/q1.txt', { destination: 'reports/moved.txt' }],
      ['DELETE', '/files/reports/q1.txt', undefined],
    ]
    for (const [method, p, body] of changes) {
      for (const auth of [{ session }, { session: web.body.id as string }, { key }]) {
        const r = await call(s, method, p, { ...auth, ...(body === undefined ? {} : { body }) })
        expect({ what: `${method} ${p}`, status: r.status, type: r.body?.type }).toEqual({
          what: `${method} ${p}`,
          status: 403,
          type: READ_ONLY,
        })
      }
    }
    // Nothing changed.
    expect((await call(s, 'GET', '/files/reports/q1.txt', { key: s.adminKey })).status).toBe(200)
    expect((await call(s, 'GET', `/users/${plain.id}`, { key: s.adminKey })).body.name).toBeNull()
    expect((await call(s, 'GET', '/folders/new-folder', { key: s.adminKey })).status).toBe(404)
    // Their API key reads as their sessions do.
    expect((await call(s, 'GET', `/users/${plain.id}`, { key })).status).toBe(200)
  })

  it('lets them change their own password (and nothing else of their record), enrol two-factor sign-in and sign out', async () => {
    const me = await readOnlyAdmin()
    const session = await login(s, me.username, me.password)
    const reauth = { 'X-Service-Reauthentication': `password:${me.password}` }
    expectError(
      await call(s, 'PATCH', `/users/${me.id}`, {
        session,
        headers: reauth,
        body: { password: 'auditor-password-2', name: 'Me' },
      }),
      403,
      READ_ONLY,
    )
    expectError(
      await call(s, 'PATCH', `/users/${me.id}`, { session, body: { readonly_site_admin: false } }),
      403,
      READ_ONLY,
    )
    // Another user's password is a change like any other.
    expectError(
      await call(s, 'PATCH', `/users/${plain.id}`, {
        session,
        headers: reauth,
        body: { password: 'plain-password-9' },
      }),
      403,
      READ_ONLY,
    )
    const changed = await call(s, 'PATCH', `/users/${me.id}`, {
      session,
      headers: reauth,
      body: { id: me.id, password: 'auditor-password-2', password_confirmation: 'auditor-password-2' },
    })
    expect(changed.status, changed.text).toBe(200)
    expect(changed.body.readonly_site_admin).toBe(true)
    await login(s, me.username, 'auditor-password-2')

    // Two-factor methods: their own, enrolled and removed with their own rights.
    const enrolled = await call(s, 'POST', '/two_factor_authentication_methods', {
      session,
      body: { method_type: 'totp' },
    })
    expect(enrolled.status, enrolled.text).toBe(201)
    const plainKey = (await makeKey(s, plain.id)).key
    const others = await call(s, 'POST', '/two_factor_authentication_methods', {
      key: plainKey,
      body: { method_type: 'totp' },
    })
    expect(others.status).toBe(201)
    // They see another user's method as a site admin does, but may not remove it.
    expect(
      (await call(s, 'GET', `/two_factor_authentication_methods/${others.body.id}`, { session })).status,
    ).toBe(200)
    const reauth2 = { 'X-Service-Reauthentication': 'password:auditor-password-2' }
    expectError(
      await call(s, 'DELETE', `/two_factor_authentication_methods/${others.body.id}`, {
        session,
        headers: reauth2,
      }),
      404,
      'not-found',
    )
    const removed = await call(s, 'DELETE', `/two_factor_authentication_methods/${enrolled.body.id}`, {
      session,
      headers: reauth2,
    })
    expect(removed.status, removed.text).toBe(204)

    const out = await call(s, 'DELETE', '/sessions', { session })
    expect(out.status).toBe(200)
    expectError(await call(s, 'GET', '/user', { session }), 401, 'not-authenticated/authentication-required')
  })

  it('counts them among the site admins whom the site asks for two-factor sign-in', async () => {
    const me = await readOnlyAdmin()
    const rule = { require_2fa: true, require_2fa_user_type: 'site_admins' }
    expect((await call(s, 'PATCH', '/site', { key: s.adminKey, body: rule })).status).toBe(200)
    try {
      const session = await login(s, me.username, me.password)
      expect((await call(s, 'GET', '/site', { session })).body.session).toEqual({
        two_factor_setup_needed: true,
        read_only: true,
      })
      // A user who is not an administrator of any kind is not asked.
      const other = await login(s, plain.username, plain.password)
      expect((await call(s, 'GET', '/site', { session: other })).body.session.two_factor_setup_needed).toBe(
        false,
      )
    } finally {
      await call(s, 'PATCH', '/site', { key: s.adminKey, body: { require_2fa: false } })
    }
  })

  it('refuses WebDAV writes with 403 and serves every file', async () => {
    const auth = basic(auditor.username, auditor.password)
    const got = await dav(s, 'GET', '/reports/q1.txt', { auth })
    expect([got.status, got.text]).toEqual([200, 'quarter one'])
    expect((await dav(s, 'PUT', '/reports/dav.txt', { auth, body: 'x' })).status).toBe(403)
    expect((await dav(s, 'MKCOL', '/dav-folder', { auth })).status).toBe(403)
    expect((await dav(s, 'DELETE', '/reports/q1.txt', { auth })).status).toBe(403)
    for (const method of ['MOVE', 'COPY']) {
      const r = await dav(s, method, '/reports/q1.txt', {
        auth,
        headers: { Destination: `${s.url}/dav/reports/${method.toLowerCase()}.txt` },
      })
      expect(r.status, method).toBe(403)
    }
    const lockinfo =
      '<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>'
    expect((await dav(s, 'LOCK', '/reports/q1.txt', { auth, body: lockinfo })).status).toBe(403)
    expect((await call(s, 'GET', '/files/reports/q1.txt', { key: s.adminKey })).status).toBe(200)
    for (const made of ['dav.txt', 'move.txt', 'copy.txt']) {
      expect((await call(s, 'GET', `/files/reports/${made}`, { key: s.adminKey })).status).toBe(404)
    }
  })

  it('lets site_admin win over readonly_site_admin', async () => {
    const both = await readOnlyAdmin({ site_admin: true })
    const r = await call(s, 'POST', '/sessions', {
      body: { username: both.username, password: both.password },
    })
    expect(r.body.read_only).toBe(false)
    const made = await call(s, 'POST', '/groups', { session: r.body.id, body: { name: `both-${both.id}` } })
    expect(made.status, made.text).toBe(201)
  })

  it('refuses SFTP uploads, folders and removals as permission errors, and serves every file', async () => {
    const local = path.join(dir, 'up.txt')
    await fs.writeFile(local, 'upload')
    const read = await sftpBatch(s.sftp.port, auditor.username, auditor.password, [
      'ls /',
      `get /reports/q1.txt ${dir}/q1.txt`,
    ])
    expect(read.code, read.stderr).toBe(0)
    expect(read.stdout).toContain('/reports')
    expect(await fs.readFile(path.join(dir, 'q1.txt'), 'utf8')).toBe('quarter one')
    for (const command of [
      `put ${local} /reports/up.txt`,
      'mkdir /made',
      'rm /reports/q1.txt',
      'rename /reports/q1.txt /reports/r.txt',
    ]) {
      const r = await sftpBatch(s.sftp.port, auditor.username, auditor.password, [command])
      expect(r.code, command).not.toBe(0)
      expect(r.stderr, command).toMatch(/Permission denied/)
    }
    expect((await call(s, 'GET', '/files/reports/q1.txt', { key: s.adminKey })).status).toBe(200)
    expect((await call(s, 'GET', '/files/reports/up.txt', { key: s.adminKey })).status).toBe(404)
    expect((await call(s, 'GET', '/folders/made', { key: s.adminKey })).status).toBe(404)
  })
})
