import { describe, expect, it } from 'vitest'
import { hashPassword } from '../src/security/secrets.js'
import { basic, dav, davType } from './helpers/dav.js'
import { call, dialects, grant, makeKey, makeUser, useServer } from './helpers/server.js'

describe.each(dialects)('WebDAV authentication (%s)', (dialect) => {
  const s = useServer(dialect, { LOGIN_MAX_FAILURES: '3' })

  const actions = (username: string, action: string) =>
    s.container.db
      .selectFrom('actions')
      .select(['interface'])
      .where('username', '=', username)
      .where('action', '=', action)
      .execute()
  const look = (auth: string) => dav(s, 'PROPFIND', '/', { auth, headers: { Depth: '0' } })

  it('checks the password once and remembers the login for the next requests', async () => {
    const u = await makeUser(s, { username: 'remy' })
    const results = await Promise.all([1, 2, 3, 4, 5].map(() => look(basic('remy', u.password))))
    expect(results.map((r) => r.status)).toEqual([207, 207, 207, 207, 207])
    expect((await look(basic('remy', u.password))).status).toBe(207)
    expect(await actions('remy', 'login')).toEqual([{ interface: 'dav' }])
    // Windows puts its domain before the name.
    expect((await look(basic('WORKGROUP\\remy', u.password))).status).toBe(207)
  })

  it('takes an API key as the password of its own user only', async () => {
    const u = await makeUser(s, { username: 'kim' })
    await grant(s, u.id, 'k', 'full')
    const key = await makeKey(s, u.id)
    expect((await look(basic('kim', key.key))).status).toBe(207)
    const other = await makeUser(s, { username: 'ola' })
    const r = await look(basic('ola', key.key))
    expect(r.status).toBe(401)
    expect(r.headers.get('www-authenticate')).toMatch(/^Basic realm="Wharf"/)
    // Checked as ola's password, and wrong: a failed login of ola's, while her own password works.
    expect(await actions('ola', 'failedlogin')).toEqual([{ interface: 'dav' }])
    expect((await look(basic('ola', other.password))).status).toBe(207)
  })

  it('counts every wrong password, and locks the user out as POST /sessions does', async () => {
    const u = await makeUser(s, { username: 'lou' })
    for (let i = 0; i < 3; i++) expect((await look(basic('lou', `wrong-${i}`))).status).toBe(401)
    expect(await actions('lou', 'failedlogin')).toHaveLength(3)
    const locked = await look(basic('lou', u.password))
    expect(locked.status).toBe(401)
    expect(davType(locked)).toBe('not-authenticated/locked-out')
    expect(locked.headers.get('retry-after')).not.toBeNull()
  })

  it('refuses a remembered login at once when the user is disabled or the password changes', async () => {
    const dis = await makeUser(s, { username: 'dan' })
    expect((await look(basic('dan', dis.password))).status).toBe(207)
    const off = await call(s, 'PATCH', `/users/${dis.id}`, { key: s.adminKey, body: { disabled: true } })
    expect(off.status, off.text).toBe(200)
    expect((await look(basic('dan', dis.password))).status).toBe(401)

    const pw = await makeUser(s, { username: 'pia' })
    expect((await look(basic('pia', pw.password))).status).toBe(207)
    const changed = await call(s, 'PATCH', `/users/${pw.id}`, {
      key: s.adminKey,
      body: { password: 'a-new-password-9' },
    })
    expect(changed.status, changed.text).toBe(200)
    expect((await look(basic('pia', pw.password))).status).toBe(401)
    expect((await look(basic('pia', 'a-new-password-9'))).status).toBe(207)

    // Changed by the user themselves, which ends no session: the reuse ends all the same.
    const own = await makeUser(s, { username: 'ida' })
    expect((await look(basic('ida', own.password))).status).toBe(207)
    await s.container.db
      .updateTable('users')
      .set({ password_hash: await hashPassword('ida-new-password'), password_set_at: Date.now() + 1 })
      .where('id', '=', own.id)
      .execute()
    expect((await look(basic('ida', own.password))).status).toBe(401)
    expect((await look(basic('ida', 'ida-new-password'))).status).toBe(207)
  })

  it('answers other methods with 405 naming the WebDAV ones, and a compressed body with 415', async () => {
    const u = await makeUser(s, { username: 'pat' })
    const auth = basic('pat', u.password)
    const post = await dav(s, 'POST', '/x', { auth, body: 'x' })
    expect(post.status).toBe(405)
    expect(post.headers.get('allow')).toBe(
      'COPY, DELETE, GET, HEAD, LOCK, MKCOL, MOVE, OPTIONS, PROPFIND, PROPPATCH, PUT, UNLOCK',
    )
    const gz = await dav(s, 'PUT', '/x.txt', { auth, body: 'x', headers: { 'Content-Encoding': 'gzip' } })
    expect(gz.status).toBe(415)
    expect(gz.text).toContain('<D:error')
  })

  it('removes a lock only with the rights LOCK takes: not by a key limited to another folder or with permission set none', async () => {
    const u = await makeUser(s, { username: 'una' })
    await grant(s, u.id, 'una', 'full')
    const admin = basic('admin', 'admin-password-1')
    for (const folder of ['/una', '/una/a', '/una/b']) {
      expect((await dav(s, 'MKCOL', folder, { auth: admin })).status).toBe(201)
    }
    const lockinfo =
      '<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>'
    const own = basic('una', u.password)
    const locked = await dav(s, 'LOCK', '/una/a/', { auth: own, body: lockinfo })
    expect(locked.status).toBe(200)
    const headers = { 'Lock-Token': locked.headers.get('lock-token')! }
    const elsewhere = basic('una', (await makeKey(s, u.id, { path: 'una/b' })).key)
    const none = basic('una', (await makeKey(s, u.id, { permission_set: 'none' })).key)
    const narrow = await dav(s, 'UNLOCK', '/una/a/', { auth: elsewhere, headers })
    expect(narrow.status).toBe(403)
    expect(davType(narrow)).toBe('not-authorized/api-key-is-path-restricted')
    const nothing = await dav(s, 'UNLOCK', '/una/a/', { auth: none, headers })
    expect(nothing.status).toBe(403)
    expect(davType(nothing)).toBe('not-authorized/full-permission-required')
    // A key limited to a folder inside the locked one reaches the lock's token, not the lock itself.
    const inside = basic('una', (await makeKey(s, u.id, { path: 'una/a/in' })).key)
    expect(
      (await dav(s, 'MKCOL', '/una/a/in', { auth: own, headers: { If: `(${headers['Lock-Token']})` } }))
        .status,
    ).toBe(201)
    const below = await dav(s, 'UNLOCK', '/una/a/in/', { auth: inside, headers })
    expect(below.status).toBe(403)
    expect(davType(below)).toBe('not-authorized/api-key-is-path-restricted')
    // The lock is still there: a write without its token is refused, and its own user removes it.
    expect((await dav(s, 'PUT', '/una/a/x.txt', { auth: own, body: 'x' })).status).toBe(423)
    expect((await dav(s, 'UNLOCK', '/una/a/', { auth: own, headers })).status).toBe(204)
  })
})
