import Files from 'files.com/lib/Files.js'
import Group from 'files.com/lib/models/Group.js'
import GroupUser from 'files.com/lib/models/GroupUser.js'
import Permission from 'files.com/lib/models/Permission.js'
import { describe, expect, it } from 'vitest'
import { call, dialects, makeKey, makeUser, type TestServer } from '../helpers/server.js'
import { describeError, sdkError, sdkServer } from './sdk.js'

describe.each(dialects)('files.com SDK: groups (%s)', (dialect) => {
  let s: TestServer
  sdkServer(dialect, (server) => {
    s = server
  })

  it('creates, finds, lists, updates, saves and deletes groups', async () => {
    Files.setApiKey(s.adminKey)
    const ann = await makeUser(s, { username: 'sdk-ann' })
    const ben = await makeUser(s, { username: 'sdk-ben' })
    const created = await Group.create({
      name: 'sdk-team',
      notes: 'n',
      user_ids: `${ann.id}`,
      admin_ids: `${ben.id}`,
    })
    expect(created).toBeInstanceOf(Group)
    expect(created.getName()).toBe('sdk-team')
    expect(created.user_ids).toBe(`${ann.id},${ben.id}`)
    expect(created.admin_ids).toBe(`${ben.id}`)
    expect(created.usernames).toBe('sdk-ann,sdk-ben')

    const found = await Group.find(created.id)
    expect(found.attributes).toEqual(created.attributes)
    expect((await Group.list({ filter: { name: 'sdk-team' } })).map((g) => g.id)).toEqual([created.id])

    const updated = await found.update({ notes: 'changed', user_ids: `${ben.id}` })
    expect(updated.notes).toBe('changed')
    expect(updated.user_ids).toBe(`${ben.id}`)

    // save() sends every attribute back, the read-only ones included.
    const again = await Group.find(created.id)
    again.setNotes('saved')
    await again.save()
    expect((await Group.find(created.id)).notes).toBe('saved')

    await found.delete()
    const gone = await sdkError(Group.find(created.id))
    expect(describeError(gone)).toEqual({
      className: 'NotFound_GroupNotFoundError',
      type: 'not-found/group-not-found',
      httpCode: 404,
    })
  })

  it('manages memberships with GroupUser, as a group administrator too', async () => {
    Files.setApiKey(s.adminKey)
    const lead = await makeUser(s, { username: 'sdk-lead' })
    const cam = await makeUser(s, { username: 'sdk-cam' })
    const group = await Group.create({ name: 'sdk-crew', admin_ids: `${lead.id}` })

    const leadKey = (await makeKey(s, lead.id)).key
    const added = await GroupUser.create(
      { group_id: group.id, user_id: cam.id, admin: false },
      { apiKey: leadKey },
    )
    expect(added).toBeInstanceOf(GroupUser)
    expect(added.attributes).toEqual({
      id: added.id,
      group_id: group.id,
      group_name: 'sdk-crew',
      user_id: cam.id,
      usernames: 'sdk-cam',
      admin: false,
    })
    const listed = await GroupUser.list({ group_id: group.id })
    expect(listed.map((m) => m.user_id)).toEqual([lead.id, cam.id])

    const member = listed.find((m) => m.user_id === cam.id)!
    const promoted = await member.update({ group_id: group.id, user_id: cam.id, admin: true })
    expect(promoted.admin).toBe(true)
    await member.delete({ group_id: group.id, user_id: cam.id })
    expect((await GroupUser.list({ group_id: group.id })).map((m) => m.user_id)).toEqual([lead.id])

    const camKey = (await makeKey(s, cam.id)).key
    const refused = await sdkError(
      GroupUser.create({ group_id: group.id, user_id: cam.id }, { apiKey: camKey }),
    )
    expect(describeError(refused)).toEqual({
      className: 'NotFound_GroupNotFoundError',
      type: 'not-found/group-not-found',
      httpCode: 404,
    })
  })

  it('grants a folder permission to a group with Permission.create', async () => {
    Files.setApiKey(s.adminKey)
    const dee = await makeUser(s, { username: 'sdk-dee' })
    const group = await Group.create({ name: 'sdk-readers', user_ids: `${dee.id}` })
    const p = await Permission.create({ path: 'sdk-shared', group_id: group.id, permission: 'readonly' })
    expect(p).toBeInstanceOf(Permission)
    expect(p.attributes).toMatchObject({ user_id: null, group_id: group.id, group_name: 'sdk-readers' })
    expect((await Permission.list({ group_id: String(group.id) })).map((x) => x.id)).toEqual([p.id])

    expect((await call(s, 'POST', '/folders/sdk-shared', { key: s.adminKey, body: {} })).status).toBe(201)
    const deeKey = (await makeKey(s, dee.id)).key
    expect((await call(s, 'GET', '/folders/sdk-shared', { key: deeKey })).status).toBe(200)
    await p.delete()
    expect((await call(s, 'GET', '/folders/sdk-shared', { key: deeKey })).status).toBe(403)
  })
})
