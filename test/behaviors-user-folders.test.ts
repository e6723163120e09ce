import { describe, expect, it } from 'vitest'
import { operatorPrincipal } from '../src/identity/principal.js'
import { findRow } from './helpers/file-rows.js'
import { uploaded } from './helpers/files.js'
import { call, dialects, expectError, makeKey, makeUser, useServer } from './helpers/server.js'

/** create_user_folders: a folder per user, with the user's permission on it. */
describe.each(dialects)('create_user_folders (%s)', (dialect) => {
  const s = useServer(dialect)

  const rule = async (path: string, value: unknown) => {
    const r = await call(s, 'POST', '/behaviors', {
      key: s.adminKey,
      body: { path, behavior: 'create_user_folders', value },
    })
    expect(r.status, r.text).toBe(201)
    return r.body
  }
  const permissionsOf = async (userId: number) => {
    const r = await call(s, 'GET', `/permissions?user_id=${userId}`, { key: s.adminKey })
    expect(r.status).toBe(200)
    return r.body.map((p: any) => [p.path, p.permission]).sort()
  }

  it('validates each value with model-save-error naming the field; group_id must be a group of the site', async () => {
    const cases: [unknown, string][] = [
      [{ permission: 'owner' }, 'value.permission'],
      [{ new_folder_name: 'email' }, 'value.new_folder_name'],
      [{ subfolders: ['ok', '../up'] }, 'value.subfolders'],
      [{ subfolders: 'inbox' }, 'value.subfolders'],
      [{ existing_users: 'yes' }, 'value.existing_users'],
      [{ group_id: 'seven' }, 'value.group_id'],
      [{ group_id: 0 }, 'value.group_id'],
      [{ group_id: 987654 }, 'value.group_id'],
    ]
    for (const [value, field] of cases) {
      const r = await call(s, 'POST', '/behaviors', {
        key: s.adminKey,
        body: { path: 'v', behavior: 'create_user_folders', value },
      })
      expectError(r, 422, 'processing-failure/model-save-error')
      expect(Object.keys(r.body.model_errors), JSON.stringify(value)).toEqual([field])
    }
    const groups = await call(s, 'POST', '/behaviors', {
      key: s.adminKey,
      body: { path: 'v', behavior: 'create_user_folders', value: { group_id: 987654 } },
    })
    expect(groups.body.model_errors['value.group_id'][0]).toContain('no group 987654')
    // Nor may a PATCH point an existing behavior at a group that is not there.
    const b = await rule('v-patch', { permission: 'full' })
    const patched = await call(s, 'PATCH', `/behaviors/${b.id}`, {
      key: s.adminKey,
      body: { value: { group_id: 987654 } },
    })
    expectError(patched, 422, 'processing-failure/model-save-error')
    expect(Object.keys(patched.body.model_errors)).toEqual(['value.group_id'])
    expect(
      (await call(s, 'GET', `/behaviors/${b.id}`, { key: s.adminKey })).body.value.group_id,
    ).toBeUndefined()
    expect((await call(s, 'DELETE', `/behaviors/${b.id}`, { key: s.adminKey })).status).toBe(204)
  })

  it('a user created over REST gets a folder, its subfolders and the permission, in one go', async () => {
    const b = await rule('homes', { permission: 'full', subfolders: ['inbox', 'work/drafts'] })
    expect(b.value).toEqual({
      permission: 'full',
      new_folder_name: 'username',
      subfolders: ['inbox', 'work/drafts'],
      existing_users: false,
    })
    const created = await call(s, 'POST', '/users', {
      key: s.adminKey,
      body: { username: 'newcomer', password: 'newcomer-password-1' },
    })
    expect(created.status, created.text).toBe(201)
    for (const p of ['homes/newcomer', 'homes/newcomer/inbox', 'homes/newcomer/work/drafts']) {
      expect((await findRow(s, p))?.type, p).toBe('directory')
    }
    expect(await permissionsOf(created.body.id)).toEqual([['homes/newcomer', 'full']])
    // The permission works: the user uploads into their folder, and nowhere else.
    const key = (await makeKey(s, created.body.id)).key
    await uploaded(s, 'homes/newcomer/inbox/a.txt', 'hi', key)
    expect((await call(s, 'POST', '/folders/homes/other', { key, body: {} })).status).toBe(403)
  })

  it('a user created by the operator, as `wharf users create` does, gets the folder too', async () => {
    await rule('ops-homes', { permission: 'readonly' })
    const u = await s.container.services.users.create(operatorPrincipal(s.container.site.id), {
      username: 'by-operator',
      password: 'operator-made-1',
    })
    expect((await findRow(s, 'ops-homes/by-operator'))?.type).toBe('directory')
    expect(await permissionsOf(u.id)).toContainEqual(['ops-homes/by-operator', 'readonly'])
  })

  it('existing_users makes folders for the users already there; an existing folder is reused', async () => {
    const a = await makeUser(s, { username: 'early-a' })
    const b = await makeUser(s, { username: 'early-b' })
    await call(s, 'POST', '/folders/team/early-b', { key: s.adminKey, body: { mkdir_parents: true } })
    await rule('team', { permission: 'readonly', existing_users: true })
    expect((await findRow(s, 'team/early-a'))?.type).toBe('directory')
    expect(await permissionsOf(a.id)).toContainEqual(['team/early-a', 'readonly'])
    expect(await permissionsOf(b.id)).toContainEqual(['team/early-b', 'readonly'])
    // Without existing_users, nobody already there gets one.
    await rule('later', { permission: 'full' })
    expect(await findRow(s, 'later/early-a')).toBeUndefined()
  })

  it('new_folder_name "name" uses the display name, and a file in the way is left alone', async () => {
    await rule('named-homes', { new_folder_name: 'name', permission: 'writeonly' })
    await call(s, 'POST', '/folders/named-homes', { key: s.adminKey, body: {} })
    const created = await call(s, 'POST', '/users', {
      key: s.adminKey,
      body: { username: 'ada', name: 'Ada Lovelace', password: 'ada-password-12' },
    })
    expect(created.status, created.text).toBe(201)
    expect((await findRow(s, 'named-homes/Ada Lovelace'))?.type).toBe('directory')
    expect(await permissionsOf(created.body.id)).toContainEqual(['named-homes/Ada Lovelace', 'writeonly'])

    await uploaded(s, 'named-homes/blocked', 'a file')
    const blocked = await call(s, 'POST', '/users', {
      key: s.adminKey,
      body: { username: 'blocked', password: 'blocked-password-1' },
    })
    expect(blocked.status, blocked.text).toBe(201)
    expect((await findRow(s, 'named-homes/blocked'))?.type).toBe('file')
    expect(await permissionsOf(blocked.body.id)).not.toContainEqual(['named-homes/blocked', 'writeonly'])
  })

  describe('group_id', () => {
    const group = async (name: string, userIds: number[] = []) => {
      const r = await call(s, 'POST', '/groups', {
        key: s.adminKey,
        body: { name, ...(userIds.length ? { user_ids: userIds.join(',') } : {}) },
      })
      expect(r.status, r.text).toBe(201)
      return r.body.id as number
    }

    it('a user added through /group_users gets the folder and permission; a new user in no group does not', async () => {
      const g = await group('gf-members')
      const b = await rule('gf-homes', { permission: 'full', subfolders: ['inbox'], group_id: g })
      expect(b.value.group_id).toBe(g)
      // A user created over REST, in no group, gets nothing from it (behaviors without a group
      // still make theirs).
      const outsider = await call(s, 'POST', '/users', {
        key: s.adminKey,
        body: { username: 'gf-outsider', password: 'gf-outsider-password-1' },
      })
      expect(outsider.status, outsider.text).toBe(201)
      expect(await findRow(s, 'gf-homes/gf-outsider')).toBeUndefined()
      expect(await findRow(s, 'homes/gf-outsider')).toBeDefined()
      expect((await permissionsOf(outsider.body.id)).map((p: string[]) => p[0])).not.toContain(
        'gf-homes/gf-outsider',
      )
      const member = await makeUser(s, { username: 'gf-member' })
      expect(await findRow(s, 'gf-homes/gf-member')).toBeUndefined()
      const added = await call(s, 'POST', '/group_users', {
        key: s.adminKey,
        body: { group_id: g, user_id: member.id },
      })
      expect(added.status, added.text).toBe(201)
      expect((await findRow(s, 'gf-homes/gf-member'))?.type).toBe('directory')
      expect((await findRow(s, 'gf-homes/gf-member/inbox'))?.type).toBe('directory')
      expect(await permissionsOf(member.id)).toEqual([['gf-homes/gf-member', 'full']])
      // Leaving the group leaves the folder and the permission.
      const removed = await call(s, 'DELETE', `/group_users/${added.body.id}`, {
        key: s.adminKey,
        body: { group_id: g, user_id: member.id },
      })
      expect(removed.status, removed.text).toBe(204)
      expect((await findRow(s, 'gf-homes/gf-member'))?.type).toBe('directory')
      expect(await permissionsOf(member.id)).toEqual([['gf-homes/gf-member', 'full']])
    })

    it('members named in POST /groups and PATCH /groups user_ids and admin_ids get their folders', async () => {
      const a = await makeUser(s, { username: 'gf-a' })
      const b = await makeUser(s, { username: 'gf-b' })
      const c = await makeUser(s, { username: 'gf-c' })
      // A behavior of another group is no matter for these.
      const other = await group('gf-other')
      await rule('gf-other-homes', { permission: 'readonly', group_id: other })
      const g = await group('gf-late')
      await rule('gf-team', { permission: 'readonly', group_id: g })
      const patched = await call(s, 'PATCH', `/groups/${g}`, {
        key: s.adminKey,
        body: { user_ids: `${a.id}`, admin_ids: `${b.id}` },
      })
      expect(patched.status, patched.text).toBe(200)
      expect(await permissionsOf(a.id)).toEqual([['gf-team/gf-a', 'readonly']])
      expect(await permissionsOf(b.id)).toEqual([['gf-team/gf-b', 'readonly']])
      expect(await findRow(s, 'gf-team/gf-c')).toBeUndefined()
      expect(await findRow(s, 'gf-other-homes/gf-a')).toBeUndefined()
      // POST /groups names members of a new group: a behavior on it cannot exist yet, but one
      // made afterwards with existing_users reaches them.
      const fresh = await group('gf-fresh', [c.id])
      await rule('gf-fresh-homes', { permission: 'full', group_id: fresh, existing_users: true })
      expect(await permissionsOf(c.id)).toEqual([['gf-fresh-homes/gf-c', 'full']])
      expect(await findRow(s, 'gf-fresh-homes/gf-a')).toBeUndefined()
    })

    it('a deleted group leaves its behavior, which makes nothing; PATCH adds members to a group', async () => {
      // A group deleted leaves its behavior, which then makes nothing; group ids are never reused,
      // so a group created later does not inherit it.
      const gone = await group('gf-gone')
      const b = await rule('gf-gone-homes', { permission: 'full', group_id: gone })
      expect((await call(s, 'DELETE', `/groups/${gone}`, { key: s.adminKey })).status).toBe(204)
      expect((await call(s, 'GET', `/behaviors/${b.id}`, { key: s.adminKey })).body.value.group_id).toBe(gone)
      const d = await makeUser(s, { username: 'gf-d' })
      const next = await group('gf-next', [d.id])
      expect(next).not.toBe(gone)
      expect(await findRow(s, 'gf-gone-homes/gf-d')).toBeUndefined()
      expect(await permissionsOf(d.id)).toEqual([])
      // PATCH adds a colleague of d to gf-next, whose behavior makes the folder.
      await rule('gf-next-homes', { permission: 'list', group_id: next })
      const e = await makeUser(s, { username: 'gf-e' })
      const patched = await call(s, 'PATCH', `/groups/${next}`, {
        key: s.adminKey,
        body: { user_ids: `${d.id},${e.id}` },
      })
      expect(patched.status, patched.text).toBe(200)
      expect(await permissionsOf(e.id)).toEqual([['gf-next-homes/gf-e', 'list']])
      // d was a member already: no folder for them from a PATCH that keeps them.
      expect(await findRow(s, 'gf-next-homes/gf-d')).toBeUndefined()
    })

    it('existing_users with group_id makes folders for the current members only', async () => {
      const m = await makeUser(s, { username: 'gf-current' })
      const n = await makeUser(s, { username: 'gf-not-member' })
      const g = await group('gf-existing', [m.id])
      await rule('gf-existing-homes', { permission: 'full', existing_users: true, group_id: g })
      expect(await permissionsOf(m.id)).toEqual([['gf-existing-homes/gf-current', 'full']])
      expect(await findRow(s, 'gf-existing-homes/gf-not-member')).toBeUndefined()
      expect(await permissionsOf(n.id)).toEqual([])
    })
  })
})
