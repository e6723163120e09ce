import Files from 'files.com/lib/Files.js'
import Bundle from 'files.com/lib/models/Bundle.js'
import BundleDownload from 'files.com/lib/models/BundleDownload.js'
import BundleRegistration from 'files.com/lib/models/BundleRegistration.js'
import User from 'files.com/lib/models/User.js'
import { describe, expect, it } from 'vitest'
import { makeFile, makeFolder } from '../helpers/file-rows.js'
import { call, dialects, grant, makeKey, makeUser, type TestServer } from '../helpers/server.js'
import { describeError, type Recorder, sdkError, sdkServer } from './sdk.js'

describe.each(dialects)('files.com SDK: share links (%s)', (dialect) => {
  let s: TestServer
  let rec: Recorder
  sdkServer(dialect, (server, recorder) => {
    s = server
    rec = recorder
  })

  /** A user who may share `folder` (with a file in it), and their key. */
  async function sharer(folder: string): Promise<{ id: number; key: string }> {
    const u = await makeUser(s)
    await makeFolder(s, folder)
    await makeFile(s, `${folder}/a.txt`)
    await grant(s, u.id, folder, 'full')
    Files.setApiKey(s.adminKey)
    const user = await User.find(u.id)
    await user.update({ attachments_permission: true })
    return { id: u.id, key: (await makeKey(s, u.id)).key }
  }

  it('creates, finds, lists, updates (also through save()) and deletes with the SDK', async () => {
    const me = await sharer('sdk-one')
    Files.setApiKey(me.key)
    const created = await Bundle.create({
      paths: ['sdk-one', 'sdk-one/a.txt'],
      password: 'bundle-password-1',
      description: 'from the SDK',
      max_uses: 3,
      permissions: 'read_write',
      create_snapshot: false,
    })
    expect(created).toBeInstanceOf(Bundle)
    expect(created.code).toMatch(/^[0-9a-f]{32}$/)
    expect(created.getCode()).toBe(created.code)
    expect(created.url).toBe(`${s.url}/f/${created.code}`)
    expect(created.password_protected).toBe(true)
    expect(created.attributes['password']).toBeUndefined()
    expect(created.paths).toEqual(['sdk-one', 'sdk-one/a.txt'])
    expect(created.bundlepaths).toEqual([
      { recursive: true, path: 'sdk-one' },
      { recursive: true, path: 'sdk-one/a.txt' },
    ])
    expect(created.user_id).toBe(me.id)

    const found = await Bundle.find(created.id)
    expect(found.attributes).toEqual(created.attributes)
    expect(rec.requests.at(-1)!.url).toBe(`/api/rest/v1/bundles/${created.id}?id=${created.id}`)

    const listed = await Bundle.list()
    expect(listed.map((b) => b.id)).toEqual([created.id])
    expect(listed[0]!.paths).toBeUndefined()

    const updated = await found.update({ note: 'internal', code: 'sdk-code-1' })
    expect(updated.note).toBe('internal')
    expect(updated.code).toBe('sdk-code-1')
    expect(updated.description).toBe('from the SDK')

    // save() sends every attribute back, read-only and hosted-only ones included.
    updated.setNote('saved')
    expect(await updated.save()).toBe(true)
    // The SDK's properties are fixed when the object is made; save() refreshes its attributes.
    expect(updated.attributes['note']).toBe('saved')
    expect((await Bundle.find(created.id)).note).toBe('saved')

    await updated.delete()
    const err = await sdkError(Bundle.find(created.id))
    expect(describeError(err)).toMatchObject({ httpCode: 404, type: 'not-found' })
  })

  it('lists across pages with auto-pagination, sorted and filtered', async () => {
    const me = await sharer('sdk-two')
    Files.setApiKey(me.key)
    const ids: number[] = []
    for (const [i, expires_at] of [
      '2099-03-01T00:00:00Z',
      '2098-01-01T00:00:00Z',
      '2099-01-01T00:00:00Z',
    ].entries()) {
      ids.push((await Bundle.create({ paths: ['sdk-two'], code: `sdk-two-${i}`, expires_at })).id)
    }
    const all = await Bundle.list({ per_page: 2 })
    expect(all.map((b) => b.id)).toEqual(ids)
    const sorted = await Bundle.list({ per_page: 2, sort_by: { expires_at: 'asc' } })
    expect(sorted.map((b) => b.id)).toEqual([ids[1], ids[2], ids[0]])
    const prefixed = await Bundle.list({ filter_prefix: { code: 'SDK-TWO-2' } })
    expect(prefixed.map((b) => b.id)).toEqual([ids[2]])
    Files.setApiKey(s.adminKey)
    const theirs = await Bundle.list({ user_id: me.id, filter: { user_id: me.id } })
    expect(theirs.map((b) => b.id)).toEqual(ids)
  })

  it('reports the refusals as API errors with their types', async () => {
    const u = await makeUser(s)
    const key = (await makeKey(s, u.id)).key
    Files.setApiKey(key)
    const refused = await sdkError(Bundle.create({ paths: ['anything'] }))
    expect(describeError(refused)).toMatchObject({
      httpCode: 403,
      type: 'not-authorized/not-allowed-to-create-bundle',
    })
    const me = await sharer('sdk-three')
    Files.setApiKey(me.key)
    const missing = await sdkError(Bundle.create({ paths: ['sdk-three/none.txt'] }))
    expect(describeError(missing)).toMatchObject({ httpCode: 404, type: 'not-found/bundle-path-not-found' })
    const bad = await sdkError(Bundle.create({ paths: ['sdk-three'], permissions: 'full' }))
    expect(describeError(bad)).toMatchObject({ httpCode: 422, type: 'processing-failure/model-save-error' })
  })

  it('round-trips the user’s attachments_permission', async () => {
    const u = await makeUser(s)
    Files.setApiKey(s.adminKey)
    const user = await User.find(u.id)
    expect(user.attributes['attachments_permission']).toBe(false)
    const on = await user.update({ attachments_permission: true })
    expect(on.attributes['attachments_permission']).toBe(true)
    expect(on.attributes['bundle_permission']).toBe(true)
  })

  it('lists the visits and downloads of a share link with the SDK', async () => {
    const me = await sharer('sdk-visits')
    Files.setApiKey(me.key)
    const bundle = await Bundle.create({ paths: ['sdk-visits'] })
    const reg = await call(s, 'POST', `/public/bundles/${bundle.code}/registrations`, {
      body: { name: 'Sam' },
    })
    expect(reg.status).toBe(201)
    const headers = { 'X-Bundle-Registration-Code': reg.body.code as string }
    const file = await call(s, 'GET', `/public/bundles/${bundle.code}/files/sdk-visits/a.txt`, { headers })
    expect((await fetch(file.body.download_uri)).status).toBe(200)

    const regs = await BundleRegistration.list({ bundle_id: bundle.id })
    expect(regs.map((r) => [r.name, r.bundle_code, r.code])).toEqual([['Sam', bundle.code, null]])
    const downloads = await BundleDownload.list({ bundle_id: bundle.id })
    expect(downloads.map((d) => [d.download_method, d.path])).toEqual([['file', 'sdk-visits/a.txt']])
    expect(downloads[0]!.bundle_registration['name']).toBe('Sam')

    // Another user's links' records are not theirs to see.
    const other = await sharer('sdk-visits-other')
    Files.setApiKey(other.key)
    expect(await BundleRegistration.list()).toEqual([])
    expect(await BundleDownload.list()).toEqual([])
  })
})
