import { beforeAll, describe, expect, it } from 'vitest'
import { makeFile, makeFolder } from './helpers/file-rows.js'
import {
  call,
  dialects,
  expectError,
  grant,
  login,
  makeKey,
  makeUser,
  type TestUser,
  useServer,
} from './helpers/server.js'

const FUTURE = '2099-01-01T00:00:00Z'
const SAVE = 'processing-failure/model-save-error'

describe.each(dialects)('Bundle API (%s)', (dialect) => {
  const s = useServer(dialect)
  let alice: TestUser
  let bob: TestUser
  let aliceKey: string
  let bobKey: string
  let plainKey: string

  /** Lets a user create share links. */
  const mayShare = (id: number) =>
    call(s, 'PATCH', `/users/${id}`, { key: s.adminKey, body: { attachments_permission: true } })

  beforeAll(async () => {
    alice = await makeUser(s, { username: 'alice' })
    bob = await makeUser(s, { username: 'bob' })
    const plain = await makeUser(s, { username: 'plain' })
    await makeFolder(s, 'shared/docs')
    await makeFile(s, 'shared/docs/Report.pdf')
    await makeFile(s, 'shared/notes.txt')
    await makeFolder(s, 'private')
    await makeFolder(s, 'bobs')
    await grant(s, alice.id, 'shared', 'readonly')
    await grant(s, bob.id, 'bobs', 'full')
    await grant(s, plain.id, 'shared', 'full')
    expect((await mayShare(alice.id)).status).toBe(200)
    expect((await mayShare(bob.id)).status).toBe(200)
    aliceKey = (await makeKey(s, alice.id)).key
    bobKey = (await makeKey(s, bob.id)).key
    plainKey = (await makeKey(s, plain.id)).key
  })

  it('creates, shows, lists, updates and deletes a share link, with every field of the SDK', async () => {
    const created = await call(s, 'POST', '/bundles', {
      key: aliceKey,
      body: {
        paths: ['/shared/docs/', 'SHARED/notes.txt'],
        description: 'For the auditors',
        note: 'internal',
        expires_at: FUTURE,
        max_uses: 5,
        require_registration: true,
        password: 'open-sesame-1',
        // Hosted-only settings: accepted, ignored.
        form_field_set_id: 3,
        create_snapshot: true,
        clickwrap_id: 2,
      },
    })
    expect(created.status, created.text).toBe(201)
    const id = created.body.id as number
    const code = created.body.code as string
    expect(code).toMatch(/^[0-9a-f]{32}$/)
    expect(created.body).toEqual({
      code,
      color_left: null,
      color_link: null,
      color_text: null,
      color_top: null,
      color_top_text: null,
      url: `${s.url}/f/${code}`,
      description: 'For the auditors',
      expires_at: '2099-01-01T00:00:00Z',
      password_protected: true,
      permissions: 'read',
      preview_only: false,
      require_registration: true,
      require_share_recipient: false,
      require_logout: false,
      clickwrap_body: null,
      form_field_set: null,
      skip_name: false,
      skip_email: false,
      start_access_on_date: null,
      skip_company: false,
      id,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      dont_separate_submissions_by_folder: false,
      max_uses: 5,
      note: 'internal',
      path_template: null,
      path_template_time_zone: null,
      send_email_receipt_to_uploader: false,
      snapshot_id: null,
      user_id: alice.id,
      username: 'alice',
      clickwrap_id: null,
      inbox_id: null,
      watermark_attachment: null,
      watermark_value: null,
      has_inbox: false,
      dont_allow_folders_in_uploads: false,
      // Stored as the files are spelled.
      paths: ['shared/docs', 'shared/notes.txt'],
      bundlepaths: [
        { recursive: true, path: 'shared/docs' },
        { recursive: true, path: 'shared/notes.txt' },
      ],
    })
    expect(created.text).not.toContain('open-sesame')

    const shown = await call(s, 'GET', `/bundles/${id}`, { key: aliceKey })
    expect(shown.status).toBe(200)
    expect(shown.body).toEqual(created.body)

    const list = await call(s, 'GET', '/bundles', { key: aliceKey })
    expect(list.status).toBe(200)
    expect(list.body.map((b: { id: number }) => b.id)).toEqual([id])
    // Lists leave the paths out.
    expect(list.body[0].paths).toBeUndefined()
    expect(list.body[0].bundlepaths).toBeUndefined()

    const updated = await call(s, 'PATCH', `/bundles/${id}`, {
      key: aliceKey,
      body: { code: 'Audit-2099', permissions: 'preview_only', paths: ['shared/notes.txt'], password: '' },
    })
    expect(updated.status, updated.text).toBe(200)
    expect(updated.body).toMatchObject({
      code: 'Audit-2099',
      url: `${s.url}/f/Audit-2099`,
      permissions: 'preview_only',
      preview_only: true,
      password_protected: false,
      paths: ['shared/notes.txt'],
      description: 'For the auditors',
    })
    // What the SDK's save() sends back passes; a changed read-only field does not.
    const echoed = await call(s, 'PATCH', `/bundles/${id}`, { key: aliceKey, body: updated.body })
    expect(echoed.status, echoed.text).toBe(200)
    expect(echoed.body).toEqual(updated.body)
    const changed = await call(s, 'PATCH', `/bundles/${id}`, {
      key: aliceKey,
      body: { ...updated.body, username: 'mallory' },
    })
    expectError(changed, 400, 'bad-request/request-params-invalid')

    const gone = await call(s, 'DELETE', `/bundles/${id}`, { key: aliceKey })
    expect(gone.status).toBe(204)
    expectError(await call(s, 'GET', `/bundles/${id}`, { key: aliceKey }), 404, 'not-found')
  })

  it('speaks XML: create, show and list', async () => {
    const created = await call(s, 'POST', '/bundles.xml', {
      key: aliceKey,
      raw: '<bundle><paths type="array"><path>shared/docs</path></paths><code>xml-code</code><max_uses type="integer">2</max_uses></bundle>',
      contentType: 'application/xml',
    })
    expect(created.status, created.text).toBe(201)
    expect(created.text).toContain('<code>xml-code</code>')
    expect(created.text).toContain('<max_uses type="integer">2</max_uses>')
    expect(created.text).toContain('<paths type="array">\n    <path>shared/docs</path>\n  </paths>')
    expect(created.text).toContain(
      '<bundlepaths type="array">\n    <bundlepath>\n      <recursive type="boolean">true</recursive>\n      <path>shared/docs</path>\n    </bundlepath>\n  </bundlepaths>',
    )
    expect(created.text).toContain('<form_field_set nil="true"/>')
    const id = Number(/<id type="integer">(\d+)<\/id>/.exec(created.text)![1])
    const shown = await call(s, 'GET', `/bundles/${id}.xml`, { key: aliceKey })
    expect(shown.status).toBe(200)
    expect(shown.text).toMatch(/^<\?xml[^>]*>\n<bundle>\n {2}<code>xml-code<\/code>/)
    const list = await call(s, 'GET', '/bundles.xml?filter[code]=xml-code', { key: aliceKey })
    expect(list.status).toBe(200)
    expect(list.text).toContain('<bundles type="array">\n  <bundle>\n    <code>xml-code</code>')
    expect(list.text).not.toContain('<paths')
    const updated = await call(s, 'PATCH', `/bundles/${id}.xml`, {
      key: aliceKey,
      raw: '<bundle><note>from XML</note><skip_name type="boolean">true</skip_name><paths type="array"><path>shared/notes.txt</path></paths></bundle>',
      contentType: 'application/xml',
    })
    expect(updated.status, updated.text).toBe(200)
    expect(updated.text).toContain('<note>from XML</note>')
    expect(updated.text).toContain('<skip_name type="boolean">true</skip_name>')
    expect(updated.text).toContain('<paths type="array">\n    <path>shared/notes.txt</path>\n  </paths>')
    const refused = await call(s, 'PATCH', `/bundles/${id}.xml`, {
      key: aliceKey,
      raw: '<bundle><permissions>everything</permissions></bundle>',
      contentType: 'application/xml',
    })
    expect(refused.status).toBe(422)
    expect(refused.text).toContain('<type>processing-failure/model-save-error</type>')
    expect((await call(s, 'DELETE', `/bundles/${id}.xml`, { key: aliceKey })).status).toBe(204)
  })

  it('pages with cursors, sorts by expires_at and filters as the SDK documents', async () => {
    const u = await makeUser(s)
    await grant(s, u.id, 'shared', 'readonly')
    await mayShare(u.id)
    const key = (await makeKey(s, u.id)).key
    const made: { id: number; code: string; expires_at: string | null }[] = []
    const expiries = ['2098-05-01T00:00:00Z', null, '2097-01-01T00:00:00Z', '2099-03-01T00:00:00Z', null]
    for (const [i, expires_at] of expiries.entries()) {
      const r = await call(s, 'POST', '/bundles', {
        key,
        body: { paths: ['shared'], code: `page-${i}-code`, ...(expires_at ? { expires_at } : {}) },
      })
      expect(r.status, r.text).toBe(201)
      made.push({ id: r.body.id, code: r.body.code, expires_at })
    }
    const ids = made.map((m) => m.id)

    const seen: number[] = []
    let url = '/bundles?per_page=2'
    for (;;) {
      const r = await call(s, 'GET', url, { key })
      expect(r.status).toBe(200)
      seen.push(...r.body.map((b: { id: number }) => b.id))
      const next = r.headers.get('x-files-cursor-next')
      if (!next) break
      url = `/bundles?per_page=2&cursor=${encodeURIComponent(next)}`
    }
    expect(seen).toEqual(ids)

    const sorted = await call(s, 'GET', '/bundles?sort_by[expires_at]=asc', { key })
    expect(sorted.body.map((b: { id: number }) => b.id)).toEqual([ids[2], ids[0], ids[3], ids[1], ids[4]])
    const desc = await call(s, 'GET', '/bundles?sort_by[expires_at]=desc&per_page=2', { key })
    expect(desc.body.map((b: { id: number }) => b.id)).toEqual([ids[4], ids[1]])
    const descNext = await call(
      s,
      'GET',
      `/bundles?sort_by[expires_at]=desc&per_page=2&cursor=${encodeURIComponent(desc.headers.get('x-files-cursor-next')!)}`,
      { key },
    )
    expect(descNext.body.map((b: { id: number }) => b.id)).toEqual([ids[3], ids[0]])

    const only = async (q: string) =>
      (await call(s, 'GET', `/bundles?${q}`, { key })).body.map((b: { id: number }) => b.id)
    expect(await only('filter[code]=PAGE-3-CODE')).toEqual([ids[3]])
    expect(await only('filter_prefix[code]=page-1')).toEqual([ids[1]])
    expect(await only(`filter[user_id]=${u.id}`)).toEqual(ids)
    expect(await only('filter[expires_at]=2097-01-01T00:00:00Z')).toEqual([ids[2]])
    expect(await only('filter_gt[expires_at]=2098-05-01T00:00:00Z')).toEqual([ids[3]])
    expect(await only('filter_gteq[expires_at]=2098-05-01T00:00:00Z')).toEqual([ids[0], ids[3]])
    expect(await only('filter_lt[expires_at]=2098-05-01T00:00:00Z')).toEqual([ids[2]])
    expect(await only('filter_lteq[expires_at]=2098-05-01T00:00:00Z')).toEqual([ids[0], ids[2]])
    expect(await only('filter_gt[created_at]=2000-01-01T00:00:00Z')).toEqual(ids)
    expect(await only('filter_gteq[created_at]=2000-01-01T00:00:00Z')).toEqual(ids)
    expect(await only('filter_lt[created_at]=2000-01-01T00:00:00Z')).toEqual([])
    expect(await only('filter_lteq[created_at]=2000-01-01T00:00:00Z')).toEqual([])
    // Times are kept to the millisecond and shown to the second: an equal filter needs a whole second.
    await s.container.db
      .updateTable('bundles')
      .set({ created_at: Date.parse('2020-02-02T00:00:00Z') })
      .where('id', '=', ids[0]!)
      .execute()
    expect(await only('filter[created_at]=2020-02-02T00:00:00Z')).toEqual([ids[0]])
    expectError(
      await call(s, 'GET', '/bundles?sort_by[code]=asc', { key }),
      400,
      'bad-request/invalid-filter-field',
    )
    expectError(
      await call(s, 'GET', '/bundles?filter[note]=x', { key }),
      400,
      'bad-request/invalid-filter-field',
    )

    // A site admin sees every user's bundles, or one user's with user_id; others only their own.
    const all = await call(s, 'GET', '/bundles', { key: s.adminKey })
    expect(all.body.map((b: { id: number }) => b.id)).toEqual(expect.arrayContaining(ids))
    expect(
      await call(s, 'GET', `/bundles?user_id=${u.id}`, { key: s.adminKey }).then((r) => r.body.length),
    ).toBe(5)
    expect((await call(s, 'GET', '/bundles', { key: aliceKey })).body).toEqual([])
    expectError(
      await call(s, 'GET', `/bundles?user_id=${u.id}`, { key: aliceKey }),
      403,
      'not-authorized/user-id-without-site-admin',
    )
  })

  it('refuses users without attachments_permission, unreadable and unknown paths', async () => {
    expectError(
      await call(s, 'POST', '/bundles', { key: plainKey, body: { paths: ['shared'] } }),
      403,
      'not-authorized/not-allowed-to-create-bundle',
    )
    expectError(
      await call(s, 'POST', '/bundles', { key: aliceKey, body: { paths: ['private'] } }),
      403,
      'not-authorized/read-permission-required',
    )
    // Alice may read shared/ but not write to it: no link that takes uploads.
    expectError(
      await call(s, 'POST', '/bundles', {
        key: aliceKey,
        body: { paths: ['shared'], permissions: 'read_write' },
      }),
      403,
      'not-authorized/write-permission-required',
    )
    expectError(
      await call(s, 'POST', '/bundles', { key: aliceKey, body: { paths: ['shared/missing.txt'] } }),
      404,
      'not-found/bundle-path-not-found',
    )
    // Bob may write to his folder: an upload link is his to make.
    const upload = await call(s, 'POST', '/bundles', {
      key: bobKey,
      body: { paths: ['bobs'], permissions: 'write' },
    })
    expect(upload.status, upload.text).toBe(201)
  })

  it('keeps a path-restricted key inside its folder; app keys may, office keys may not', async () => {
    const restricted = (await makeKey(s, alice.id, { path: 'shared/docs' })).key
    expectError(
      await call(s, 'POST', '/bundles', { key: restricted, body: { paths: ['shared/notes.txt'] } }),
      403,
      'not-authorized/api-key-is-path-restricted',
    )
    const inside = await call(s, 'POST', '/bundles', {
      key: restricted,
      body: { paths: ['shared/docs/Report.pdf'] },
    })
    expect(inside.status, inside.text).toBe(201)
    expect((await call(s, 'DELETE', `/bundles/${inside.body.id}`, { key: restricted })).status).toBe(204)

    const desktop = (await makeKey(s, alice.id, { permission_set: 'desktop_app' })).key
    const made = await call(s, 'POST', '/bundles', { key: desktop, body: { paths: ['shared'] } })
    expect(made.status, made.text).toBe(201)
    expect((await call(s, 'DELETE', `/bundles/${made.body.id}`, { key: desktop })).status).toBe(204)
    const office = (await makeKey(s, alice.id, { permission_set: 'office_integration' })).key
    expectError(
      await call(s, 'POST', '/bundles', { key: office, body: { paths: ['shared'] } }),
      403,
      'not-authorized/api-key-only-for-office-integration',
    )
  })

  it('hides another user’s bundle; a site admin manages it and creates for a user', async () => {
    const bobs = await call(s, 'POST', '/bundles', { key: bobKey, body: { paths: ['bobs'] } })
    expect(bobs.status).toBe(201)
    const id = bobs.body.id as number
    expectError(await call(s, 'GET', `/bundles/${id}`, { key: aliceKey }), 404, 'not-found')
    expectError(
      await call(s, 'PATCH', `/bundles/${id}`, { key: aliceKey, body: { note: 'x' } }),
      404,
      'not-found',
    )
    expectError(await call(s, 'DELETE', `/bundles/${id}`, { key: aliceKey }), 404, 'not-found')
    const byAdmin = await call(s, 'PATCH', `/bundles/${id}`, { key: s.adminKey, body: { note: 'checked' } })
    expect(byAdmin.status).toBe(200)
    expect(byAdmin.body.note).toBe('checked')

    expectError(
      await call(s, 'POST', '/bundles', { key: aliceKey, body: { paths: ['shared'], user_id: bob.id } }),
      403,
      'not-authorized/user-id-without-site-admin',
    )
    const forAlice = await call(s, 'POST', '/bundles', {
      key: s.adminKey,
      body: { paths: ['shared/docs'], user_id: alice.id },
    })
    expect(forAlice.status, forAlice.text).toBe(201)
    expect(forAlice.body).toMatchObject({ user_id: alice.id, username: 'alice' })
    // The creator must be able to read the paths, whoever asks.
    expectError(
      await call(s, 'POST', '/bundles', { key: s.adminKey, body: { paths: ['private'], user_id: alice.id } }),
      403,
      'not-authorized/read-permission-required',
    )
    // A site-wide key's own bundle has no creator.
    const siteWide = await call(s, 'POST', '/bundles', { key: s.adminKey, body: { paths: ['private'] } })
    expect(siteWide.status).toBe(201)
    expect(siteWide.body).toMatchObject({ user_id: null, username: null })
  })

  it('checks the settings: code, permissions, dates and uses (422 naming the field)', async () => {
    const refused = async (body: Record<string, unknown>, field: string) => {
      const r = await call(s, 'POST', '/bundles', { key: aliceKey, body: { paths: ['shared'], ...body } })
      expectError(r, 422, SAVE)
      expect(Object.keys(r.body.model_errors)).toEqual([field])
    }
    await refused({ code: 'abc' }, 'code')
    await refused({ code: 'with space' }, 'code')
    await refused({ code: 'x'.repeat(101) }, 'code')
    await refused({ permissions: 'full' }, 'permissions')
    await refused({ permissions: 'everything' }, 'permissions')
    await refused({ expires_at: '2001-01-01T00:00:00Z' }, 'expires_at')
    await refused({ max_uses: 0 }, 'max_uses')
    await refused(
      { start_access_on_date: '2099-02-01T00:00:00Z', expires_at: '2099-01-01T00:00:00Z' },
      'start_access_on_date',
    )
    await refused({ paths: [] }, 'paths')

    const first = await call(s, 'POST', '/bundles', {
      key: aliceKey,
      body: { paths: ['shared'], code: 'Taken-Code' },
    })
    expect(first.status).toBe(201)
    // Codes are unique case-insensitively, whoever holds them.
    const r = await call(s, 'POST', '/bundles', {
      key: bobKey,
      body: { paths: ['bobs'], code: 'taken-code' },
    })
    expectError(r, 422, SAVE)
    expect(Object.keys(r.body.model_errors)).toEqual(['code'])
    const other = await call(s, 'POST', '/bundles', {
      key: aliceKey,
      body: { paths: ['shared'], code: 'other-code' },
    })
    const u = await call(s, 'PATCH', `/bundles/${other.body.id}`, {
      key: aliceKey,
      body: { code: 'TAKEN-code' },
    })
    expectError(u, 422, SAVE)
    expectError(
      await call(s, 'PATCH', `/bundles/${other.body.id}`, {
        key: aliceKey,
        body: { expires_at: '2001-01-01T00:00:00Z' },
      }),
      422,
      SAVE,
    )
    expectError(
      await call(s, 'POST', '/bundles', { key: aliceKey, body: { paths: ['shared/../private'] } }),
      400,
      'bad-request/invalid-path',
    )
  })

  it('refuses changes once the permission is taken away, but lets the owner delete', async () => {
    const u = await makeUser(s)
    await grant(s, u.id, 'shared', 'readonly')
    await mayShare(u.id)
    const key = (await makeKey(s, u.id)).key
    const b = await call(s, 'POST', '/bundles', { key, body: { paths: ['shared'] } })
    expect(b.status).toBe(201)
    await call(s, 'PATCH', `/users/${u.id}`, { key: s.adminKey, body: { bundle_permission: false } })
    expectError(
      await call(s, 'PATCH', `/bundles/${b.body.id}`, { key, body: { note: 'x' } }),
      403,
      'not-authorized/not-allowed-to-create-bundle',
    )
    expect((await call(s, 'GET', `/bundles/${b.body.id}`, { key })).status).toBe(200)
    expect((await call(s, 'DELETE', `/bundles/${b.body.id}`, { key })).status).toBe(204)
  })

  it('goes with its creator when the user is deleted', async () => {
    const u = await makeUser(s)
    await grant(s, u.id, 'shared', 'readonly')
    await mayShare(u.id)
    const key = (await makeKey(s, u.id)).key
    const b = await call(s, 'POST', '/bundles', { key, body: { paths: ['shared'] } })
    expect(b.status).toBe(201)
    expect((await call(s, 'DELETE', `/users/${u.id}`, { key: s.adminKey })).status).toBe(204)
    expectError(await call(s, 'GET', `/bundles/${b.body.id}`, { key: s.adminKey }), 404, 'not-found')
  })

  it('reads and writes the user’s attachments_permission under both names', async () => {
    const created = await call(s, 'POST', '/users', {
      key: s.adminKey,
      body: { username: 'sharer', bundle_permission: true },
    })
    expect(created.status, created.text).toBe(201)
    expect(created.body).toMatchObject({ attachments_permission: true, bundle_permission: true })
    const off = await call(s, 'PATCH', `/users/${created.body.id}`, {
      key: s.adminKey,
      body: { attachments_permission: false },
    })
    expect(off.body).toMatchObject({ attachments_permission: false, bundle_permission: false })
    const xml = await call(s, 'GET', `/users/${created.body.id}.xml`, { key: s.adminKey })
    expect(xml.text).toContain('<attachments_permission type="boolean">false</attachments_permission>')
    expect(xml.text).toContain('<bundle_permission type="boolean">false</bundle_permission>')
    expectError(
      await call(s, 'PATCH', `/users/${created.body.id}`, {
        key: s.adminKey,
        body: { attachments_permission: true, bundle_permission: false },
      }),
      422,
      SAVE,
    )
    // Only site admins grant it.
    const session = await login(s, 'alice', alice.password)
    expectError(
      await call(s, 'PATCH', `/users/${bob.id}`, { session, body: { attachments_permission: false } }),
      403,
      'not-authorized/site-admin-required',
    )
    const self = await call(s, 'PATCH', `/users/${alice.id}`, { session, body: { bundle_permission: false } })
    expectError(self, 403, 'not-authorized/site-admin-required')
    // Echoed unchanged (what the SDK's save() does), it passes.
    const echo = await call(s, 'PATCH', `/users/${alice.id}`, {
      session,
      body: { attachments_permission: true, bundle_permission: true, name: 'Alice' },
    })
    expect(echo.status, echo.text).toBe(200)
  })
})
