import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { uploaded } from './helpers/files.js'
import { call, dialects, expectError, makeKey, makeUser, type TestUser } from './helpers/server.js'
import { sftpBatch, useSftpServer } from './helpers/sftp.js'

/**
 * Groups, their members (GroupUser) and their folder permissions: a member reaches what the group
 * was granted over every front end, and stops reaching it once removed.
 */
describe.each(dialects)('groups (%s)', (dialect) => {
  const s = useSftpServer(dialect)
  /** Administrator of the group "team". */
  let lead: TestUser
  let leadKey: string
  /** A plain member of "team". */
  let mia: TestUser
  let miaKey: string
  /** In no group. */
  let out: TestUser
  let outKey: string
  let teamId: number
  let dir: string

  const as = (key: string, method: string, url: string, body?: unknown) =>
    call(s, method, url, { key, ...(body !== undefined ? { body } : {}) })
  const admin = (method: string, url: string, body?: unknown) => as(s.adminKey, method, url, body)
  const lastAction = (action: string) =>
    s.container.db
      .selectFrom('actions')
      .selectAll()
      .where('action', '=', action)
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow()

  beforeAll(async () => {
    lead = await makeUser(s, { username: 'lead' })
    mia = await makeUser(s, { username: 'mia' })
    out = await makeUser(s, { username: 'out' })
    leadKey = (await makeKey(s, lead.id)).key
    miaKey = (await makeKey(s, mia.id)).key
    outKey = (await makeKey(s, out.id)).key
    const r = await admin('POST', '/groups', {
      name: 'team',
      notes: 'the team',
      user_ids: `${mia.id}`,
      admin_ids: `${lead.id}`,
    })
    expect(r.status, r.text).toBe(201)
    teamId = r.body.id
    await uploaded(s, 'team/plan.txt', 'the plan')
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wharf-groups-'))
  })
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  describe('groups', () => {
    it('creates a group with members and administrators, recording group_create', async () => {
      const r = await admin('GET', `/groups/${teamId}`)
      expect(r.status).toBe(200)
      expect(r.body).toEqual({
        id: teamId,
        name: 'team',
        notes: 'the team',
        user_ids: `${mia.id},${lead.id}`,
        admin_ids: `${lead.id}`,
        usernames: 'mia,lead',
        allowed_ips: null,
        ftp_permission: true,
        sftp_permission: true,
        dav_permission: true,
        restapi_permission: true,
        site_id: s.container.site.id,
      })
      const a = await s.container.db
        .selectFrom('actions')
        .selectAll()
        .where('action', '=', 'group_create')
        .executeTakeFirstOrThrow()
      expect(a.display).toBe('Created group team')
      expect(JSON.parse(a.targets)).toEqual([{ type: 'group', id: teamId, name: 'team' }])
    })

    it('lists groups in pages, JSON and XML', async () => {
      expect((await admin('POST', '/groups', { name: 'other' })).status).toBe(201)
      const first = await admin('GET', '/groups?per_page=1&sort_by[name]=asc')
      expect(first.status).toBe(200)
      expect(first.body.map((g: any) => g.name)).toEqual(['other'])
      const cursor = first.headers.get('X-Files-Cursor-Next')
      expect(cursor).toBeTruthy()
      const next = await admin('GET', `/groups?per_page=1&sort_by[name]=asc&cursor=${cursor}`)
      expect(next.body.map((g: any) => g.name)).toEqual(['team'])
      const xml = await call(s, 'GET', '/groups.xml?filter[name]=team', { key: s.adminKey })
      expect(xml.status).toBe(200)
      expect(xml.text).toContain('<groups type="array">\n  <group>')
      expect(xml.text).toContain('<name>team</name>')
    })

    it('shows members only their own groups, and hides the others', async () => {
      const mine = await as(miaKey, 'GET', '/groups')
      expect(mine.body.map((g: any) => g.name)).toEqual(['team'])
      expect((await as(outKey, 'GET', '/groups')).body).toEqual([])
      expect((await as(miaKey, 'GET', `/groups/${teamId}`)).status).toBe(200)
      expectError(await as(outKey, 'GET', `/groups/${teamId}`), 404, 'not-found/group-not-found')
      expectError(await admin('GET', '/groups/999999'), 404, 'not-found/group-not-found')
    })

    it('leaves creating, changing and deleting groups to site admins', async () => {
      expectError(
        await as(leadKey, 'POST', '/groups', { name: 'mine' }),
        403,
        'not-authorized/site-admin-required',
      )
      expectError(
        await as(leadKey, 'PATCH', `/groups/${teamId}`, { notes: 'x' }),
        403,
        'not-authorized/site-admin-required',
      )
      expectError(await as(leadKey, 'DELETE', `/groups/${teamId}`), 403, 'not-authorized/site-admin-required')
    })

    it('refuses a blank or taken name, bad ids and unknown users', async () => {
      expectError(await admin('POST', '/groups', { name: ' ' }), 422, 'processing-failure/model-save-error')
      expectError(
        await admin('POST', '/groups', { name: 'TEAM' }),
        422,
        'processing-failure/model-save-error',
      )
      expectError(await admin('POST', '/groups', {}), 400, 'bad-request/request-params-required')
      expectError(
        await admin('POST', '/groups', { name: 'g', user_ids: '1,x' }),
        400,
        'bad-request/request-params-invalid',
      )
      expectError(
        await admin('POST', '/groups', { name: 'g', user_ids: '999999' }),
        404,
        'not-found/user-not-found',
      )
      expect((await admin('GET', '/groups?filter[name]=g')).body).toEqual([])
    })

    it('replaces the members on update, recording group_update', async () => {
      const g = await admin('POST', '/groups', { name: 'temp', user_ids: `${mia.id},${out.id}` })
      const r = await admin('PATCH', `/groups/${g.body.id}`, { name: 'temp2', user_ids: `${out.id}` })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ name: 'temp2', user_ids: `${out.id}`, admin_ids: '', usernames: 'out' })
      const promoted = await admin('PATCH', `/groups/${g.body.id}`, { admin_ids: `${mia.id}` })
      expect(promoted.body).toMatchObject({ user_ids: `${out.id},${mia.id}`, admin_ids: `${mia.id}` })
      expect((await lastAction('group_update')).display).toBe('Updated group temp2')
      expectError(
        await admin('PATCH', `/groups/${g.body.id}`, { name: 'team' }),
        422,
        'processing-failure/model-save-error',
      )
    })
  })

  describe('memberships', () => {
    it('lets a group admin add, promote and remove members, recording group_update', async () => {
      const added = await as(leadKey, 'POST', '/group_users', { group_id: teamId, user_id: out.id })
      expect(added.status, added.text).toBe(201)
      expect(added.body).toEqual({
        id: added.body.id,
        group_id: teamId,
        group_name: 'team',
        user_id: out.id,
        usernames: 'out',
        admin: false,
      })
      expect((await lastAction('group_update')).display).toBe('Added out to group team')
      expectError(
        await as(leadKey, 'POST', '/group_users', { group_id: teamId, user_id: out.id }),
        422,
        'processing-failure/model-save-error',
      )
      const promoted = await as(leadKey, 'PATCH', `/group_users/${added.body.id}`, {
        group_id: teamId,
        user_id: out.id,
        admin: true,
      })
      expect(promoted.body.admin).toBe(true)
      expectError(
        await as(leadKey, 'PATCH', `/group_users/${added.body.id}`, { group_id: teamId, user_id: mia.id }),
        400,
        'bad-request/request-params-invalid',
      )
      const gone = await as(leadKey, 'DELETE', `/group_users/${added.body.id}`, {
        group_id: teamId,
        user_id: out.id,
      })
      expect(gone.status).toBe(204)
      expect((await lastAction('group_update')).display).toBe('Removed out from group team')
      expect((await admin('GET', `/groups/${teamId}`)).body.user_ids).toBe(`${mia.id},${lead.id}`)
    })

    it('refuses members who are not the group’s administrators, and outsiders', async () => {
      expectError(
        await as(miaKey, 'POST', '/group_users', { group_id: teamId, user_id: out.id }),
        403,
        'not-authorized/site-admin-required',
      )
      expectError(
        await as(outKey, 'POST', '/group_users', { group_id: teamId, user_id: out.id }),
        404,
        'not-found/group-not-found',
      )
      const list = await admin('GET', `/group_users?group_id=${teamId}&user_id=${mia.id}`)
      const miaMembership = list.body[0].id
      expectError(
        await as(miaKey, 'DELETE', `/group_users/${miaMembership}`),
        403,
        'not-authorized/site-admin-required',
      )
      expectError(
        await as(outKey, 'DELETE', `/group_users/${miaMembership}`),
        404,
        'not-found/group-not-found',
      )
      expectError(
        await admin('POST', '/group_users', { group_id: 999999, user_id: out.id }),
        404,
        'not-found/group-not-found',
      )
      expectError(
        await admin('POST', '/group_users', { group_id: teamId, user_id: 999999 }),
        404,
        'not-found/user-not-found',
      )
      expectError(
        await admin('POST', '/group_users', { group_id: teamId }),
        400,
        'bad-request/request-params-required',
      )
      expectError(await admin('DELETE', '/group_users/999999'), 404, 'not-found')
    })

    it('lists memberships: all for site admins, a group’s for its admins, their own for members', async () => {
      const all = await admin('GET', `/group_users?group_id=${teamId}`)
      expect(all.body.map((m: any) => m.user_id)).toEqual([mia.id, lead.id])
      expect((await as(leadKey, 'GET', `/group_users?group_id=${teamId}`)).body).toHaveLength(2)
      // mia administers "temp2" (see above): she sees its members, and only herself in "team".
      expect(
        (await as(miaKey, 'GET', `/group_users?group_id=${teamId}`)).body.map((m: any) => m.user_id),
      ).toEqual([mia.id])
      // out is a plain member of "temp2" only: that one membership.
      expect(
        (await as(outKey, 'GET', '/group_users')).body.map((m: any) => [m.group_name, m.user_id]),
      ).toEqual([['temp2', out.id]])
      const xml = await call(s, 'GET', '/group_users.xml', { key: s.adminKey })
      expect(xml.text).toContain('<group-users type="array">\n  <group-user>')
    })
  })

  describe('folder permissions of groups', () => {
    let permissionId: number

    it('grants a permission to a group, shown with group_id and group_name', async () => {
      const r = await admin('POST', '/permissions', {
        path: 'team',
        group_id: teamId,
        permission: 'readonly',
      })
      expect(r.status, r.text).toBe(201)
      permissionId = r.body.id
      expect(r.body).toEqual({
        id: permissionId,
        path: 'team',
        user_id: null,
        username: null,
        group_id: teamId,
        group_name: 'team',
        permission: 'readonly',
        recursive: true,
      })
      expect(JSON.parse((await lastAction('permission_create')).targets)).toEqual([
        { type: 'permission', id: permissionId, name: 'readonly' },
        { type: 'group', id: teamId, name: 'team' },
      ])
      const listed = await admin('GET', `/permissions?group_id=${teamId}`)
      expect(listed.body.map((p: any) => p.id)).toEqual([permissionId])
      // A member's own permissions include their groups'.
      expect((await as(miaKey, 'GET', '/permissions')).body.map((p: any) => p.id)).toEqual([permissionId])
      expect((await as(outKey, 'GET', '/permissions')).body).toEqual([])
    })

    it('refuses a group permission to group admins, an unknown group, and a user and a group at once', async () => {
      expectError(
        await as(leadKey, 'POST', '/permissions', { path: 'team', group_id: teamId, permission: 'full' }),
        403,
        'not-authorized/folder-admin-permission-required',
      )
      expectError(
        await admin('POST', '/permissions', { path: 'team', group_id: 999999 }),
        404,
        'not-found/group-not-found',
      )
      expectError(
        await admin('POST', '/permissions', { path: 'team', group_name: 'nope' }),
        404,
        'not-found/group-not-found',
      )
      expectError(
        await admin('POST', '/permissions', { path: 'team', group_id: teamId, user_id: mia.id }),
        400,
        'bad-request/request-params-invalid',
      )
      expectError(
        await admin('POST', '/permissions', { path: 'team', group_name: 'TEAM', permission: 'readonly' }),
        422,
        'processing-failure/model-save-error',
      )
    })

    it('lets members reach the folder over REST and SFTP, and not once removed', async () => {
      const r = await as(miaKey, 'GET', '/files/team/plan.txt')
      expect(r.status, r.text).toBe(200)
      expectError(
        await as(outKey, 'GET', '/files/team/plan.txt'),
        403,
        'not-authorized/read-permission-required',
      )
      const local = path.join(dir, 'plan.txt')
      const got = await sftpBatch(s.sftp.port, 'mia', mia.password, [`get /team/plan.txt ${local}`])
      expect(got.code, got.stderr).toBe(0)
      expect(fs.readFileSync(local, 'utf8')).toBe('the plan')
      expect((await as(miaKey, 'GET', '/history/files/team/plan.txt')).status).toBe(200)

      const membership = (await admin('GET', `/group_users?group_id=${teamId}&user_id=${mia.id}`)).body[0].id
      expect((await admin('DELETE', `/group_users/${membership}`)).status).toBe(204)
      expectError(
        await as(miaKey, 'GET', '/files/team/plan.txt'),
        403,
        'not-authorized/read-permission-required',
      )
      const refused = await sftpBatch(s.sftp.port, 'mia', mia.password, [`get /team/plan.txt ${local}.2`])
      expect(refused.code).not.toBe(0)
      expect(fs.existsSync(`${local}.2`)).toBe(false)

      const back = await admin('POST', '/group_users', { group_id: teamId, user_id: mia.id })
      expect(back.status).toBe(201)
      expect((await as(miaKey, 'GET', '/files/team/plan.txt')).status).toBe(200)
    })

    it('answers history-permission-required to a user who may only list or write there', async () => {
      const lister = await admin('POST', '/groups', { name: 'listers', user_ids: `${out.id}` })
      expect(
        (await admin('POST', '/permissions', { path: 'team', group_id: lister.body.id, permission: 'list' }))
          .status,
      ).toBe(201)
      expect(
        (await admin('POST', '/permissions', { path: 'drop', user_id: out.id, permission: 'writeonly' }))
          .status,
      ).toBe(201)
      expect((await as(outKey, 'GET', '/folders/team')).status).toBe(200)
      for (const url of ['/history/files/team/plan.txt', '/history/folders/team', '/history/folders/drop']) {
        expectError(await as(outKey, 'GET', url), 403, 'not-authorized/history-permission-required')
      }
      expectError(
        await as(outKey, 'GET', '/history/folders/elsewhere'),
        403,
        'not-authorized/read-permission-required',
      )
      expectError(
        await as(outKey, 'GET', '/files/team/plan.txt'),
        403,
        'not-authorized/read-permission-required',
      )
      expect((await admin('DELETE', `/groups/${lister.body.id}`)).status).toBe(204)
      expectError(await as(outKey, 'GET', '/folders/team'), 403, 'not-authorized/read-permission-required')
    })

    it('gives group admins nothing the group was not granted, and the widest permission wins', async () => {
      expect(
        (await admin('POST', '/permissions', { path: 'team', user_id: mia.id, permission: 'list' })).status,
      ).toBe(201)
      // mia: list of her own, readonly through the group: she reads.
      expect((await as(miaKey, 'GET', '/files/team/plan.txt')).status).toBe(200)
      expect((await call(s, 'POST', '/folders/team/new', { key: miaKey, body: {} })).status).toBe(403)
    })
  })

  describe('a group’s admin permission', () => {
    it('makes its members folder admins there, and nowhere else', async () => {
      const g = await admin('POST', '/groups', { name: 'folder-admins', user_ids: `${out.id}` })
      expect(
        (await admin('POST', '/permissions', { path: 'projects', group_id: g.body.id, permission: 'admin' }))
          .status,
      ).toBe(201)
      const granted = await as(outKey, 'POST', '/permissions', {
        path: 'projects/x',
        user_id: mia.id,
        permission: 'readonly',
      })
      expect(granted.status, granted.text).toBe(201)
      expectError(
        await as(outKey, 'POST', '/permissions', { path: 'elsewhere', user_id: mia.id }),
        403,
        'not-authorized/folder-admin-permission-required',
      )
      expect((await admin('DELETE', `/groups/${g.body.id}`)).status).toBe(204)
      expectError(
        await as(outKey, 'POST', '/permissions', { path: 'projects/y', user_id: mia.id }),
        403,
        'not-authorized/folder-admin-permission-required',
      )
    })
  })

  describe('deletion', () => {
    it('deleting a group deletes its memberships and permissions, recording group_destroy', async () => {
      const g = await admin('POST', '/groups', { name: 'doomed', user_ids: `${out.id}` })
      const perm = await admin('POST', '/permissions', {
        path: 'team',
        group_id: g.body.id,
        permission: 'full',
      })
      expect((await as(outKey, 'GET', '/files/team/plan.txt')).status).toBe(200)
      expect((await admin('DELETE', `/groups/${g.body.id}`)).status).toBe(204)
      expect((await lastAction('group_destroy')).display).toBe('Deleted group doomed')
      expectError(await admin('GET', `/groups/${g.body.id}`), 404, 'not-found/group-not-found')
      expect((await admin('GET', `/group_users?group_id=${g.body.id}`)).body).toEqual([])
      expectError(await admin('DELETE', `/permissions/${perm.body.id}`), 404, 'not-found')
      expectError(
        await as(outKey, 'GET', '/files/team/plan.txt'),
        403,
        'not-authorized/read-permission-required',
      )
    })

    it('deleting a user deletes their memberships', async () => {
      const gone = await makeUser(s, { username: 'gone' })
      const g = await admin('POST', '/groups', { name: 'keepers', user_ids: `${gone.id},${mia.id}` })
      expect((await admin('DELETE', `/users/${gone.id}`)).status).toBe(204)
      expect((await admin('GET', `/groups/${g.body.id}`)).body.user_ids).toBe(`${mia.id}`)
    })
  })
})
