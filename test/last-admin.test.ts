import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { adminUserId, call, dialects, expectError, login, makeUser, useServer } from './helpers/server.js'

// A site always keeps an enabled site administrator (docs/decisions.md, "Users and folder permissions").
describe.each(dialects)('the last site administrator (%s)', (dialect) => {
  let adminId: number

  const s = useServer(dialect)
  beforeAll(async () => {
    adminId = await adminUserId(s)
  })

  // Each test starts with the bootstrap administrator as the only site administrator.
  beforeEach(async () => {
    await s.container.db.updateTable('users').set({ site_admin: 0 }).where('id', '!=', adminId).execute()
    await s.container.db
      .updateTable('users')
      .set({ site_admin: 1, disabled: 0 })
      .where('id', '=', adminId)
      .execute()
  })

  const enabledAdmins = async () =>
    (
      await s.container.db
        .selectFrom('users')
        .select('id')
        .where('site_admin', '=', 1)
        .where('disabled', '=', 0)
        .orderBy('id')
        .execute()
    ).map((r) => r.id)

  it('refuses demoting, disabling or deleting the only site administrator', async () => {
    const demote = await call(s, 'PATCH', `/users/${adminId}`, {
      key: s.adminKey,
      body: { site_admin: false },
    })
    expectError(demote, 422, 'processing-failure/model-save-error')
    expect(demote.body.model_errors).toEqual({
      site_admin: [
        'cannot be removed from the last enabled site administrator: make another user a site administrator first',
      ],
    })
    const disable = await call(s, 'PATCH', `/users/${adminId}`, { key: s.adminKey, body: { disabled: true } })
    expectError(disable, 422, 'processing-failure/model-save-error')
    expect(Object.keys(disable.body.model_errors)).toEqual(['disabled'])
    const both = await call(s, 'PATCH', `/users/${adminId}`, {
      key: s.adminKey,
      body: { site_admin: false, disabled: true, name: 'gone' },
    })
    expectError(both, 422, 'processing-failure/model-save-error')
    const del = await call(s, 'DELETE', `/users/${adminId}`, { key: s.adminKey })
    expectError(del, 422, 'processing-failure/model-save-error')
    expect(del.body.error).toBe(
      'User cannot be deleted while it is the last enabled site administrator: make another user a site administrator first',
    )
    expect(await enabledAdmins()).toEqual([adminId])
    // Nothing of the refused change was kept.
    const me = await call(s, 'GET', `/users/${adminId}`, { key: s.adminKey })
    expect(me.body).toMatchObject({ site_admin: true, disabled: false })
    expect(me.body.name).not.toBe('gone')
  })

  it('lets the last administrator change anything else', async () => {
    const r = await call(s, 'PATCH', `/users/${adminId}`, {
      key: s.adminKey,
      body: { site_admin: true, disabled: false, name: 'Still here' },
    })
    expect(r.status).toBe(200)
    expect(r.body.name).toBe('Still here')
  })

  it('does not count a disabled administrator', async () => {
    const other = await makeUser(s, { site_admin: true })
    await s.container.db.updateTable('users').set({ disabled: 1 }).where('id', '=', other.id).execute()
    const r = await call(s, 'PATCH', `/users/${adminId}`, { key: s.adminKey, body: { site_admin: false } })
    expectError(r, 422, 'processing-failure/model-save-error')
    // The disabled administrator may go: it was not what kept the site administered.
    const del = await call(s, 'DELETE', `/users/${other.id}`, { key: s.adminKey })
    expect(del.status).toBe(204)
  })

  it('allows it once another administrator is enabled, then refuses the other', async () => {
    const other = await makeUser(s, { site_admin: true })
    const demote = await call(s, 'PATCH', `/users/${adminId}`, {
      key: s.adminKey,
      body: { site_admin: false },
    })
    expect(demote.status).toBe(200)
    expect(demote.body.site_admin).toBe(false)
    const disable = await call(s, 'PATCH', `/users/${other.id}`, {
      key: s.adminKey,
      body: { disabled: true },
    })
    expectError(disable, 422, 'processing-failure/model-save-error')
    const del = await call(s, 'DELETE', `/users/${other.id}`, { key: s.adminKey })
    expectError(del, 422, 'processing-failure/model-save-error')
    expect(await enabledAdmins()).toEqual([other.id])
  })

  it('lets an administrator demote another while one remains', async () => {
    const other = await makeUser(s, { site_admin: true })
    const session = await login(s, other.username, other.password)
    const r = await call(s, 'PATCH', `/users/${adminId}`, { session, body: { site_admin: false } })
    expect(r.status).toBe(200)
    expect(await enabledAdmins()).toEqual([other.id])
  })

  it('of concurrent changes to the last two administrators, lets exactly one through', async () => {
    const changes = [
      (id: number) => call(s, 'PATCH', `/users/${id}`, { key: s.adminKey, body: { site_admin: false } }),
      (id: number) => call(s, 'PATCH', `/users/${id}`, { key: s.adminKey, body: { disabled: true } }),
      (id: number) => call(s, 'DELETE', `/users/${id}`, { key: s.adminKey }),
    ]
    for (let round = 0; round < 9; round++) {
      // Exactly two enabled administrators, each about to lose it in its own way.
      await s.container.db.updateTable('users').set({ site_admin: 0 }).execute()
      const a = await makeUser(s, { site_admin: true })
      const b = await makeUser(s, { site_admin: true })
      const results = await Promise.all([changes[round % 3]!(a.id), changes[Math.floor(round / 3)]!(b.id)])
      const statuses = results.map((r) => r.status)
      expect(
        statuses.filter((st) => st === 422),
        `round ${round}: ${statuses}`,
      ).toHaveLength(1)
      expect(
        statuses.filter((st) => st === 200 || st === 204),
        `round ${round}: ${statuses}`,
      ).toHaveLength(1)
      expect(await enabledAdmins(), `round ${round}`).toHaveLength(1)
    }
  })
})
