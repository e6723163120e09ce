import Files from 'files.com/lib/Files.js'
import Session from 'files.com/lib/models/Session.js'
import User from 'files.com/lib/models/User.js'
import { describe, expect, it } from 'vitest'
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  dialects,
  makeKey,
  makeUser,
  type TestServer,
} from '../helpers/server.js'
import { describeError, type Recorder, resetSdk, sdkError, sdkServer } from './sdk.js'

const unique = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 10)}`

describe.each(dialects)('files.com SDK: users (%s)', (dialect) => {
  let s: TestServer
  let rec: Recorder
  sdkServer(dialect, (server, recorder) => {
    s = server
    rec = recorder
  })

  it('creates a user with User.create, who can then log in with Session.create', async () => {
    Files.setApiKey(s.adminKey)
    const username = unique('carol')
    const user = await User.create({
      username,
      password: 'carol-password-1',
      name: 'Carol Example',
      email: `${username}@example.com`,
    })
    expect(user).toBeInstanceOf(User)
    expect(user.id).toEqual(expect.any(Number))
    expect(user.username).toBe(username)
    expect(user.name).toBe('Carol Example')
    expect(user.email).toBe(`${username}@example.com`)
    expect(user.site_admin).toBe(false)
    expect(user.self_managed).toBe(true)
    expect(user.disabled).toBe(false)
    expect(user.attributes['password']).toBeUndefined()

    resetSdk(rec.url)
    const session = await Session.create({ username, password: 'carol-password-1' })
    expect(session.id).toMatch(/^[0-9a-f]{64}$/)
  })

  it('finds a user with User.find', async () => {
    const u = await makeUser(s, { email: 'found@example.com' })
    Files.setApiKey(s.adminKey)
    const found = await User.find(u.id)
    expect(found.id).toBe(u.id)
    expect(found.username).toBe(u.username)
    expect(found.email).toBe('found@example.com')
    expect(rec.requests.at(-1)!.url).toBe(`/api/rest/v1/users/${u.id}?id=${u.id}`)
  })

  it('lists every user exactly once across several pages with auto-pagination', async () => {
    for (let i = 0; i < 5; i++) await makeUser(s)
    const all = await s.container.db.selectFrom('users').select('id').orderBy('id').execute()
    expect(all.length).toBeGreaterThan(5)
    Files.setApiKey(s.adminKey)

    const listed = await User.list({ per_page: 2 })
    expect(listed.every((u) => u instanceof User)).toBe(true)
    expect(listed.map((u) => u.id)).toEqual(all.map((r) => r.id))

    const gets = rec.requests.map((r) => new URL(r.url, 'http://x').searchParams)
    expect(gets).toHaveLength(Math.ceil(all.length / 2))
    expect(gets.map((q) => q.get('page'))).toEqual(gets.map((_, i) => (i === 0 ? null : String(i + 1))))
    expect(gets.slice(1).every((q) => (q.get('cursor') ?? '') !== '')).toBe(true)
  })

  it('lists with a sort across pages (User.all)', async () => {
    const prefix = unique('sorted')
    const made = [] as { id: number; username: string }[]
    for (const suffix of ['c', 'a', 'b']) made.push(await makeUser(s, { username: `${prefix}-${suffix}` }))
    Files.setApiKey(s.adminKey)
    const listed = await User.all({
      per_page: 2,
      sort_by: { username: 'desc' },
      filter_like: { username: `${prefix}%` },
    })
    expect(listed.map((u) => u.username)).toEqual([`${prefix}-c`, `${prefix}-b`, `${prefix}-a`])
  })

  it('updates a user with user.update (the SDK sends the id in the body too)', async () => {
    const u = await makeUser(s)
    Files.setApiKey(s.adminKey)
    const user = await User.find(u.id)
    const updated = await user.update({ name: 'New Name', email: 'new@example.com' })
    expect(updated.id).toBe(u.id)
    expect(updated.name).toBe('New Name')
    expect(updated.email).toBe('new@example.com')

    const patch = rec.requests.at(-1)!
    expect([patch.method, patch.url]).toEqual(['PATCH', `/api/rest/v1/users/${u.id}`])
    expect(JSON.parse(patch.body)).toEqual({ name: 'New Name', email: 'new@example.com', id: u.id })
    expect((await User.find(u.id)).name).toBe('New Name')
  })

  it('saves changed attributes with user.save, which sends every attribute back', async () => {
    const u = await makeUser(s, { email: 'saved@example.com' })
    Files.setApiKey(s.adminKey)
    const user = await User.find(u.id)
    user.attributes['name'] = 'Saved Name'
    expect(await user.save()).toBe(true)
    expect(JSON.parse(rec.requests.at(-1)!.body)).toMatchObject({
      id: u.id,
      name: 'Saved Name',
      created_at: expect.any(String),
    })
    const reread = await User.find(u.id)
    expect([reread.name, reread.email, reread.username, reread.site_admin]).toEqual([
      'Saved Name',
      'saved@example.com',
      u.username,
      false,
    ])
  })

  it('lets a regular user save their own record, sending back the admin-only fields unchanged', async () => {
    const u = await makeUser(s)
    Files.setApiKey((await makeKey(s, u.id)).key)
    const me = await User.find(u.id)
    me.attributes['name'] = 'Self Service'
    expect(await me.save()).toBe(true)
    expect((await User.find(u.id)).name).toBe('Self Service')

    // Changing an admin-only field is still refused.
    const again = await User.find(u.id)
    again.attributes['site_admin'] = true
    expect(describeError(await sdkError(again.save()))).toEqual({
      className: 'NotAuthorized_SiteAdminRequiredError',
      type: 'not-authorized/site-admin-required',
      httpCode: 403,
    })
    expect((await User.find(u.id)).site_admin).toBe(false)
  })

  it('sets the access fields with user.update; a login outside them fails as a wrong password', async () => {
    const u = await makeUser(s)
    Files.setApiKey(s.adminKey)
    const user = await User.find(u.id)
    expect([user.sftp_permission, user.allowed_ips, user.authenticate_until]).toEqual([true, null, null])
    const updated = await user.update({
      ftp_permission: false,
      dav_permission: false,
      allowed_ips: '127.0.0.2/32\n2001:db8::/32',
      authenticate_until: '2099-01-01T00:00:00Z',
      billing_permission: true,
    })
    expect(JSON.parse(rec.requests.at(-1)!.body)).toEqual({
      ftp_permission: false,
      dav_permission: false,
      allowed_ips: '127.0.0.2/32\n2001:db8::/32',
      authenticate_until: '2099-01-01T00:00:00Z',
      billing_permission: true,
      id: u.id,
    })
    expect([
      updated.ftp_permission,
      updated.sftp_permission,
      updated.dav_permission,
      updated.restapi_permission,
      updated.allowed_ips,
      updated.authenticate_until,
      updated.billing_permission,
    ]).toEqual([false, true, false, true, '127.0.0.2/32\n2001:db8::/32', '2099-01-01T00:00:00Z', true])

    // The SDK's save() sends every attribute back, the new ones included, unchanged.
    const again = await User.find(u.id)
    again.attributes['name'] = 'Partner'
    expect(await again.save()).toBe(true)
    expect((await User.find(u.id)).allowed_ips).toBe('127.0.0.2/32\n2001:db8::/32')

    // The SDK's client connects from 127.0.0.1: outside the list.
    resetSdk(rec.url)
    expect(
      describeError(await sdkError(Session.create({ username: u.username, password: u.password }))),
    ).toEqual({
      className: 'NotAuthenticated_InvalidUsernameOrPasswordError',
      type: 'not-authenticated/invalid-username-or-password',
      httpCode: 401,
    })
    Files.setApiKey(s.adminKey)
    await (await User.find(u.id)).update({ allowed_ips: '127.0.0.1/32' })
    resetSdk(rec.url)
    const session = await Session.create({ username: u.username, password: u.password })
    expect(session.id).toMatch(/^[0-9a-f]{64}$/)

    Files.setApiKey(s.adminKey)
    expect(describeError(await sdkError((await User.find(u.id)).update({ allowed_ips: 'office' })))).toEqual({
      className: 'ProcessingFailure_ModelSaveErrorError',
      type: 'processing-failure/model-save-error',
      httpCode: 422,
    })
  })

  it('changes a password with an API key, without reauthentication', async () => {
    const u = await makeUser(s)
    Files.setApiKey(s.adminKey)
    await (await User.find(u.id)).update({ password: 'a-new-password-1' })
    resetSdk(rec.url)
    expect((await Session.create({ username: u.username, password: 'a-new-password-1' })).id).toMatch(
      /^[0-9a-f]{64}$/,
    )
    const err = await sdkError(Session.create({ username: u.username, password: u.password }))
    expect(err.constructor.name).toBe('NotAuthenticated_InvalidUsernameOrPasswordError')
  })

  it('changes a password through a session only with X-Files-Reauthentication, passed as a request option', async () => {
    const u = await makeUser(s)
    const session = await Session.create({ username: ADMIN_USERNAME, password: ADMIN_PASSWORD })
    Files.setSessionId(session.id)

    const plain = await User.find(u.id)
    expect(describeError(await sdkError(plain.update({ password: 'another-password-1' })))).toEqual({
      className: 'NotAuthorized_ReauthenticationNeededActionError',
      type: 'not-authorized/reauthentication-needed-action',
      httpCode: 403,
    })

    const reauth = await User.find(
      u.id,
      {},
      { headers: { 'X-Files-Reauthentication': `password:${ADMIN_PASSWORD}` } },
    )
    const updated = await reauth.update({ password: 'another-password-1' })
    expect(updated.id).toBe(u.id)
    expect(rec.requests.at(-1)!.headers['x-files-reauthentication']).toBe(`password:${ADMIN_PASSWORD}`)
  })

  it('deletes a user with user.delete (id in the body too); the user is gone', async () => {
    const u = await makeUser(s)
    Files.setApiKey(s.adminKey)
    const user = await User.find(u.id)
    await user.delete()
    const del = rec.requests.at(-1)!
    expect([del.method, del.url]).toEqual(['DELETE', `/api/rest/v1/users/${u.id}`])
    expect(JSON.parse(del.body)).toEqual({ id: u.id })

    expect(describeError(await sdkError(User.find(u.id)))).toEqual({
      className: 'NotFound_UserNotFoundError',
      type: 'not-found/user-not-found',
      httpCode: 404,
    })
  })

  it('deletes a user with user.destroy as well', async () => {
    const u = await makeUser(s)
    Files.setApiKey(s.adminKey)
    await (await User.find(u.id)).destroy()
    expect((await sdkError(User.find(u.id))).constructor.name).toBe('NotFound_UserNotFoundError')
  })

  it('throws ProcessingFailure_ModelSaveErrorError for a user name already taken', async () => {
    const u = await makeUser(s)
    Files.setApiKey(s.adminKey)
    const err = await sdkError(
      User.create({ username: u.username.toUpperCase(), password: 'whatever-pass-1' }),
    )
    expect(describeError(err)).toEqual({
      className: 'ProcessingFailure_ModelSaveErrorError',
      type: 'processing-failure/model-save-error',
      httpCode: 422,
    })
  })

  it('throws ProcessingFailure_ModelSaveErrorError for a password that is too short', async () => {
    Files.setApiKey(s.adminKey)
    const err = await sdkError(User.create({ username: unique('short'), password: 'short' }))
    expect(describeError(err).className).toBe('ProcessingFailure_ModelSaveErrorError')
  })

  it('shows readonly_site_admin, active_2fa and type_of_2fa on User, and read_only on the Session of a read-only admin', async () => {
    Files.setApiKey(s.adminKey)
    const username = unique('auditor')
    const created = await User.create({ username, password: 'auditor-password-1', readonly_site_admin: true })
    expect([
      created.readonly_site_admin,
      created.site_admin,
      created.active_2fa,
      created.type_of_2fa,
    ]).toEqual([true, false, false, null])
    const plain = await makeUser(s)
    const found = await User.find(plain.id)
    expect([found.readonly_site_admin, found.active_2fa, found.type_of_2fa]).toEqual([false, false, null])

    resetSdk(rec.url)
    const session = await Session.create({ username, password: 'auditor-password-1' })
    expect(session.read_only).toBe(true)
    expect(JSON.parse(rec.requests.at(-1)!.body)).toEqual({ username, password: 'auditor-password-1' })
    Files.setSessionId(session.id)
    // Reads as a site admin does; changes nothing.
    expect((await User.find(plain.id)).id).toBe(plain.id)
    expect(describeError(await sdkError(User.create({ username: unique('eve') })))).toEqual({
      className: 'NotAuthorized_ReadOnlySessionError',
      type: 'not-authorized/read-only-session',
      httpCode: 403,
    })
    expect(describeError(await sdkError(found.update({ name: 'Renamed' })))).toEqual({
      className: 'NotAuthorized_ReadOnlySessionError',
      type: 'not-authorized/read-only-session',
      httpCode: 403,
    })
    // Their own password is theirs to change (user.update sends the id back too).
    const me = await User.find(
      created.id,
      {},
      { headers: { 'X-Files-Reauthentication': 'password:auditor-password-1' } },
    )
    expect((await me.update({ password: 'auditor-password-2' })).id).toBe(created.id)
    expect(JSON.parse(rec.requests.at(-1)!.body)).toEqual({ id: created.id, password: 'auditor-password-2' })

    resetSdk(rec.url)
    const other = await Session.create({ username: plain.username, password: plain.password })
    expect(other.read_only).toBe(false)
  })

  it("throws NotAuthorized_SiteAdminRequiredError when a regular user's key creates or reads another user", async () => {
    const alice = await makeUser(s)
    const bob = await makeUser(s)
    Files.setApiKey((await makeKey(s, alice.id)).key)
    expect(
      describeError(await sdkError(User.create({ username: unique('eve'), password: 'eve-password-1' }))),
    ).toEqual({
      className: 'NotAuthorized_SiteAdminRequiredError',
      type: 'not-authorized/site-admin-required',
      httpCode: 403,
    })
    expect((await sdkError(User.find(bob.id))).constructor.name).toBe('NotAuthorized_SiteAdminRequiredError')
    // Listing is allowed, and shows only the caller.
    expect((await User.list()).map((u) => u.id)).toEqual([alice.id])
  })

  it('throws NotFound_UserNotFoundError for an id that does not exist', async () => {
    Files.setApiKey(s.adminKey)
    const err = await sdkError(User.find(987_654_321))
    expect(describeError(err)).toEqual({
      className: 'NotFound_UserNotFoundError',
      type: 'not-found/user-not-found',
      httpCode: 404,
    })
  })
})
