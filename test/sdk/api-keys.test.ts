import Files from 'files.com/lib/Files.js'
import ApiKey from 'files.com/lib/models/ApiKey.js'
import { describe, expect, it } from 'vitest'
import { dialects, makeKey, makeUser, type TestServer } from '../helpers/server.js'
import { describeError, type Recorder, sdkError, sdkServer } from './sdk.js'

const inDays = (days: number) =>
  new Date(Date.now() + days * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z')

describe.each(dialects)('files.com SDK: API keys (%s)', (dialect) => {
  let s: TestServer
  let rec: Recorder
  sdkServer(dialect, (server, recorder) => {
    s = server
    rec = recorder
  })

  it('creates a key with ApiKey.create: the plain key comes back once and works', async () => {
    const u = await makeUser(s)
    Files.setApiKey(s.adminKey)
    const expires = inDays(30)
    const created = await ApiKey.create({
      user_id: u.id,
      name: 'ci deploy',
      description: 'used by the pipeline',
      expires_at: expires,
      permission_set: 'full',
    })
    expect(created).toBeInstanceOf(ApiKey)
    expect(created.key).toMatch(/^[0-9a-f]{64}$/)
    expect(created.getKey()).toBe(created.key)
    expect(created.id).toEqual(expect.any(Number))
    expect(created.user_id).toBe(u.id)
    expect(created.name).toBe('ci deploy')
    expect(created.description).toBe('used by the pipeline')
    expect(created.expires_at).toBe(expires)
    expect(created.permission_set).toBe('full')
    expect(created.descriptive_label).toBe(`User API key for ${u.username} (key ID #${created.id})`)

    Files.setApiKey(created.key)
    const current = await ApiKey.findCurrent()
    expect(current.id).toBe(created.id)
    expect(current.key).toBeUndefined()
    expect(current.name).toBe('ci deploy')
    expect(rec.requests.at(-1)!.headers['x-filesapi-key']).toBe(created.key)
  })

  it('finds a key by id with ApiKey.find (the SDK repeats the id in the query string)', async () => {
    const u = await makeUser(s)
    const k = await makeKey(s, u.id, { name: 'to find' })
    Files.setApiKey(s.adminKey)
    const found = await ApiKey.find(k.id)
    expect(found.id).toBe(k.id)
    expect(found.name).toBe('to find')
    expect(found.user_id).toBe(u.id)
    expect(found.key).toBeUndefined()
    expect(rec.requests.at(-1)!.url).toBe(`/api/rest/v1/api_keys/${k.id}?id=${k.id}`)

    const again = await ApiKey.get(k.id)
    expect(again.attributes).toEqual(found.attributes)
  })

  it('lists every key exactly once across several pages with auto-pagination', async () => {
    const u = await makeUser(s)
    const ids: number[] = []
    for (let i = 0; i < 7; i++) ids.push((await makeKey(s, u.id, { name: `page key ${i}` })).id)
    Files.setApiKey(s.adminKey)

    const listed = await ApiKey.list({ user_id: u.id, per_page: 3 })
    expect(listed.every((k) => k instanceof ApiKey)).toBe(true)
    expect(listed.map((k) => k.id)).toEqual(ids)
    expect(new Set(listed.map((k) => k.id)).size).toBe(7)

    // Three pages: the SDK followed X-Files-Cursor and added its own `page` parameter.
    const gets = rec.requests
      .filter((r) => r.method === 'GET')
      .map((r) => new URL(r.url, 'http://x').searchParams)
    expect(gets).toHaveLength(3)
    expect(gets.map((q) => q.get('page'))).toEqual([null, '2', '3'])
    expect(gets[0]!.get('cursor')).toBeNull()
    expect(gets[1]!.get('cursor')).toEqual(expect.any(String))
    expect(gets[2]!.get('cursor')).not.toBe(gets[1]!.get('cursor'))
    expect(gets.every((q) => q.get('per_page') === '3' && q.get('user_id') === String(u.id))).toBe(true)
  })

  it('returns only the first page when auto-pagination is off', async () => {
    const u = await makeUser(s)
    const ids: number[] = []
    for (let i = 0; i < 4; i++) ids.push((await makeKey(s, u.id)).id)
    Files.setApiKey(s.adminKey)
    Files.configureNetwork({ autoPaginate: false })
    const first = await ApiKey.list({ user_id: u.id, per_page: 3 })
    expect(first.map((k) => k.id)).toEqual(ids.slice(0, 3))
    expect(rec.requests).toHaveLength(1)
  })

  it('lists with ApiKey.all and a sort, across pages', async () => {
    const u = await makeUser(s)
    const late = await makeKey(s, u.id, { expires_at: inDays(20) })
    const early = await makeKey(s, u.id, { expires_at: inDays(10) })
    const never = await makeKey(s, u.id)
    Files.setApiKey(s.adminKey)
    const listed = await ApiKey.all({ user_id: u.id, per_page: 1, sort_by: { expires_at: 'asc' } })
    expect(listed.map((k) => k.id)).toEqual([early.id, late.id, never.id])
    expect(rec.requests).toHaveLength(3)
  })

  it('updates a key with apiKey.update (the SDK sends the id in the body too)', async () => {
    const u = await makeUser(s)
    const k = await makeKey(s, u.id, { name: 'before' })
    Files.setApiKey(s.adminKey)
    const key = await ApiKey.find(k.id)
    const expires = inDays(5)
    const updated = await key.update({
      name: 'after',
      description: 'changed by the SDK',
      expires_at: expires,
    })
    expect(updated.id).toBe(k.id)
    expect(updated.name).toBe('after')
    expect(updated.description).toBe('changed by the SDK')
    expect(updated.expires_at).toBe(expires)

    const patch = rec.requests.at(-1)!
    expect([patch.method, patch.url]).toEqual(['PATCH', `/api/rest/v1/api_keys/${k.id}`])
    expect(JSON.parse(patch.body)).toEqual({
      name: 'after',
      description: 'changed by the SDK',
      expires_at: expires,
      id: k.id,
    })

    const reread = await ApiKey.find(k.id)
    expect(reread.name).toBe('after')
  })

  it('saves changed attributes with apiKey.save, which sends every attribute back', async () => {
    const u = await makeUser(s)
    const expires = inDays(9)
    const k = await makeKey(s, u.id, { name: 'unsaved', expires_at: expires })
    Files.setApiKey(s.adminKey)
    const key = await ApiKey.find(k.id)
    key.attributes['name'] = 'saved'
    expect(await key.save()).toBe(true)
    const sent = JSON.parse(rec.requests.at(-1)!.body)
    expect(sent).toMatchObject({
      id: k.id,
      name: 'saved',
      descriptive_label: expect.any(String),
      url: expect.any(String),
    })
    expect(key.attributes['name']).toBe('saved')

    const reread = await ApiKey.find(k.id)
    expect(reread.name).toBe('saved')
    expect(reread.expires_at).toBe(expires)
    expect(reread.user_id).toBe(u.id)
    expect(reread.description).toBeNull()
    expect(reread.path).toBeNull()
  })

  it('creates a key with save() on a new ApiKey object', async () => {
    const u = await makeUser(s)
    Files.setApiKey(s.adminKey)
    const fresh = new ApiKey({ name: 'built locally', user_id: u.id })
    expect(await fresh.save()).toBe(true)
    expect(fresh.attributes['key']).toMatch(/^[0-9a-f]{64}$/)
    const stored = await ApiKey.find(fresh.attributes['id'] as number)
    expect([stored.name, stored.user_id]).toEqual(['built locally', u.id])
  })

  it('deletes a key with apiKey.delete (id in the body too); it is gone and no longer authenticates', async () => {
    const u = await makeUser(s)
    const k = await makeKey(s, u.id)
    Files.setApiKey(s.adminKey)
    const key = await ApiKey.find(k.id)
    await key.delete()
    const del = rec.requests.at(-1)!
    expect([del.method, del.url]).toEqual(['DELETE', `/api/rest/v1/api_keys/${k.id}`])
    expect(JSON.parse(del.body)).toEqual({ id: k.id })

    const err = await sdkError(ApiKey.find(k.id))
    expect(describeError(err)).toEqual({
      className: 'NotFound_ApiKeyNotFoundError',
      type: 'not-found/api-key-not-found',
      httpCode: 404,
    })

    Files.setApiKey(k.key)
    const gone = await sdkError(ApiKey.findCurrent())
    expect(gone.constructor.name).toBe('NotAuthenticated_AuthenticationRequiredError')
  })

  it('deletes a key with apiKey.destroy as well', async () => {
    const u = await makeUser(s)
    const k = await makeKey(s, u.id)
    Files.setApiKey(s.adminKey)
    await (await ApiKey.find(k.id)).destroy()
    expect((await sdkError(ApiKey.find(k.id))).constructor.name).toBe('NotFound_ApiKeyNotFoundError')
  })

  it('updates the key of the request with ApiKey.updateCurrent', async () => {
    const u = await makeUser(s)
    const k = await makeKey(s, u.id, { name: 'mine' })
    Files.setApiKey(k.key)
    const expires = inDays(3)
    const updated = await ApiKey.updateCurrent({ name: 'renamed', expires_at: expires })
    expect(updated.id).toBe(k.id)
    expect(updated.name).toBe('renamed')
    expect(updated.expires_at).toBe(expires)
    expect((await ApiKey.findCurrent()).name).toBe('renamed')
  })

  it('deletes the key of the request with ApiKey.deleteCurrent', async () => {
    const u = await makeUser(s)
    const k = await makeKey(s, u.id)
    Files.setApiKey(k.key)
    await ApiKey.deleteCurrent()
    const err = await sdkError(ApiKey.findCurrent())
    expect(describeError(err)).toEqual({
      className: 'NotAuthenticated_AuthenticationRequiredError',
      type: 'not-authenticated/authentication-required',
      httpCode: 401,
    })
    Files.setApiKey(s.adminKey)
    expect((await sdkError(ApiKey.find(k.id))).constructor.name).toBe('NotFound_ApiKeyNotFoundError')
  })

  it('throws NotAuthenticated_AuthenticationRequiredError for a key the server does not know', async () => {
    Files.setApiKey('0123456789abcdef'.repeat(4))
    const err = await sdkError(ApiKey.list())
    expect(describeError(err)).toEqual({
      className: 'NotAuthenticated_AuthenticationRequiredError',
      type: 'not-authenticated/authentication-required',
      httpCode: 401,
    })
  })

  it('throws NotAuthenticated_AuthenticationRequiredError for an expired key', async () => {
    const u = await makeUser(s)
    const k = await makeKey(s, u.id, { expires_at: inDays(1) })
    await s.container.db
      .updateTable('api_keys')
      .set({ expires_at: Date.now() - 1000 })
      .where('id', '=', k.id)
      .execute()
    Files.setApiKey(k.key)
    expect((await sdkError(ApiKey.findCurrent())).constructor.name).toBe(
      'NotAuthenticated_AuthenticationRequiredError',
    )
  })

  it('throws NotFound_ApiKeyNotFoundError for an id that does not exist', async () => {
    Files.setApiKey(s.adminKey)
    const err = await sdkError(ApiKey.find(987_654_321))
    expect(describeError(err)).toEqual({
      className: 'NotFound_ApiKeyNotFoundError',
      type: 'not-found/api-key-not-found',
      httpCode: 404,
    })
    expect(err.constructor.name).not.toBe('FilesApiError')
  })

  it('throws ProcessingFailure_ModelSaveErrorError for an expiry in the past', async () => {
    const u = await makeUser(s)
    Files.setApiKey(s.adminKey)
    const err = await sdkError(
      ApiKey.create({ user_id: u.id, name: 'stale', expires_at: '2001-01-01T00:00:00Z' }),
    )
    // The type is processing-failure/model-save-error; the SDK's class name appends "Error" to "ModelSaveError".
    expect(describeError(err)).toEqual({
      className: 'ProcessingFailure_ModelSaveErrorError',
      type: 'processing-failure/model-save-error',
      httpCode: 422,
    })
    expect(err.errors).toEqual([expect.stringMatching(/expires at/i)])
  })

  it('throws ProcessingFailure_ModelSaveErrorError for an unknown permission set on update', async () => {
    const u = await makeUser(s)
    const k = await makeKey(s, u.id)
    Files.setApiKey(s.adminKey)
    const key = await ApiKey.find(k.id)
    const err = await sdkError(key.update({ permission_set: 'superuser' }))
    expect(describeError(err).className).toBe('ProcessingFailure_ModelSaveErrorError')
    expect(err.httpCode).toBe(422)
  })

  it("throws NotAuthorized_SiteAdminRequiredError when a regular user's key reaches for another user's key", async () => {
    const alice = await makeUser(s)
    const bob = await makeUser(s)
    const aliceKey = await makeKey(s, alice.id)
    const bobKey = await makeKey(s, bob.id)
    Files.setApiKey(aliceKey.key)
    expect(describeError(await sdkError(ApiKey.find(bobKey.id)))).toEqual({
      className: 'NotAuthorized_SiteAdminRequiredError',
      type: 'not-authorized/site-admin-required',
      httpCode: 403,
    })
    expect(describeError(await sdkError(ApiKey.list({ user_id: bob.id })))).toEqual({
      className: 'NotAuthorized_UserIdWithoutSiteAdminError',
      type: 'not-authorized/user-id-without-site-admin',
      httpCode: 403,
    })
  })

  it('throws NotAuthorized_SelfManagedRequiredError when a Shared/Bot user lists keys', async () => {
    const bot = await makeUser(s, { self_managed: false })
    const k = await makeKey(s, bot.id)
    Files.setApiKey(k.key)
    const err = await sdkError(ApiKey.list())
    expect(describeError(err)).toEqual({
      className: 'NotAuthorized_SelfManagedRequiredError',
      type: 'not-authorized/self-managed-required',
      httpCode: 403,
    })
  })

  it('throws NotAuthorized_FullPermissionRequiredError for a key with permission set none, which can still read itself', async () => {
    const u = await makeUser(s)
    const k = await makeKey(s, u.id, { permission_set: 'none' })
    Files.setApiKey(k.key)
    expect((await ApiKey.findCurrent()).permission_set).toBe('none')
    const err = await sdkError(ApiKey.list())
    expect(describeError(err)).toEqual({
      className: 'NotAuthorized_FullPermissionRequiredError',
      type: 'not-authorized/full-permission-required',
      httpCode: 403,
    })
  })
})
