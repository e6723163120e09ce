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

  it('validates each value with model-save-error naming the field; group_id waits for groups', async () => {
    const cases: [unknown, string][] = [
      [{ permission: 'owner' }, 'value.permission'],
      [{ new_folder_name: 'email' }, 'value.new_folder_name'],
      [{ subfolders: ['ok', '../up'] }, 'value.subfolders'],
      [{ subfolders: 'inbox' }, 'value.subfolders'],
      [{ existing_users: 'yes' }, 'value.existing_users'],
      [{ group_id: 7 }, 'value.group_id'],
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
      body: { path: 'v', behavior: 'create_user_folders', value: { group_id: 7 } },
    })
    expect(groups.body.model_errors['value.group_id'][0]).toContain('no groups yet')
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
})
