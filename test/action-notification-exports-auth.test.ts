import { beforeAll, describe, expect, it } from 'vitest'
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
import {
  type Auth,
  createExport,
  expectCsvMatches,
  getExport,
  getResults,
  readyExport,
  type SeededRecord,
  seedLog,
  walkResults,
} from './helpers/webhook-log-fixtures.js'

/**
 * Who may export the webhook log: site-wide keys and site admins anything; folder admins inside
 * the folders they administer, and only their own exports; nobody else; keys that reach only file
 * operations or one folder not at all.
 */

describe.each(dialects)('webhook-log exports: authorization (%s)', (dialect) => {
  let siteAdmin: TestUser
  let siteAdminKey: Auth
  /** Folder admin of `fa` (and nothing else). */
  let folderAdmin: TestUser
  let folderAdminKey: Auth
  /** Folder admin of `fb`. */
  let otherAdmin: TestUser
  let otherAdminKey: Auth
  /** Full permission on `fa`, admin nowhere. */
  let plain: TestUser
  let plainKey: Auth
  let records: Record<string, SeededRecord>
  const site = () => ({ key: s.adminKey })
  const idsOf = (...names: string[]) => names.map((n) => records[n]!.id)

  const s = useServer(dialect)
  beforeAll(async () => {
    siteAdmin = await makeUser(s, { site_admin: true })
    folderAdmin = await makeUser(s)
    otherAdmin = await makeUser(s)
    plain = await makeUser(s)
    siteAdminKey = { key: (await makeKey(s, siteAdmin.id)).key }
    folderAdminKey = { key: (await makeKey(s, folderAdmin.id)).key }
    otherAdminKey = { key: (await makeKey(s, otherAdmin.id)).key }
    plainKey = { key: (await makeKey(s, plain.id)).key }
    await grant(s, folderAdmin.id, 'fa', 'admin')
    await grant(s, otherAdmin.id, 'fb', 'admin')
    await grant(s, plain.id, 'fa', 'full')
    const rows = await seedLog(s, [
      { path: 'fa/one.txt' },
      { path: 'fa/sub/two.txt', status: 500, success: false, message: 'HTTP 500 Internal Server Error' },
      { path: 'fab/three.txt' },
      { path: 'fb/four.txt' },
      { path: 'top.txt' },
    ])
    records = { one: rows[0]!, two: rows[1]!, three: rows[2]!, four: rows[3]!, top: rows[4]! }
  })

  async function ids(body: Record<string, unknown>, who: Auth): Promise<number[]> {
    const e = await readyExport(s, body, who)
    return (await walkResults(s, e.id, who)).rows.map((r) => r.id)
  }

  it('lets a site-wide key query anything, user_id 0 being itself (no user)', async () => {
    expect(await ids({}, site())).toEqual(idsOf('one', 'two', 'three', 'four', 'top'))
    const r = await createExport(s, { user_id: 0, query_status: '500' }, site())
    expect(r.status, r.text).toBe(201)
    expect(r.body.user_id).toBeNull()
  })

  it('lets a site admin query anything, by key or session, and see every export of the site', async () => {
    expect(await ids({ query_success: false }, siteAdminKey)).toEqual(idsOf('two'))
    const session = { session: await login(s, siteAdmin.username, siteAdmin.password) }
    const e = await readyExport(s, { user_id: 0 }, session)
    expect(e.user_id).toBe(siteAdmin.id)
    expect((await walkResults(s, e.id, session)).rows).toHaveLength(5)
    // Another user's export and a site-wide key's.
    const theirs = await readyExport(s, { query_folder: 'fa' }, folderAdminKey)
    const siteWide = await readyExport(s, { query_folder: 'fa' }, site())
    for (const id of [theirs.id, siteWide.id]) {
      expect((await getExport(s, id, session)).status).toBe(200)
      expect((await getResults(s, id, session)).status).toBe(200)
    }
    expect((await getExport(s, e.id, site())).body.user_id).toBe(siteAdmin.id)
  })

  it('lets a folder admin export inside their folder only, by key or session', async () => {
    expect(await ids({ query_folder: 'fa' }, folderAdminKey)).toEqual(idsOf('one', 'two'))
    expect(await ids({ query_folder: 'fa/sub' }, folderAdminKey)).toEqual(idsOf('two'))
    expect(await ids({ query_path: '/FA/one.txt' }, folderAdminKey)).toEqual(idsOf('one'))
    expect(await ids({ query_folder: 'fa', query_success: true }, folderAdminKey)).toEqual(idsOf('one'))
    const session = { session: await login(s, folderAdmin.username, folderAdmin.password) }
    const e = await readyExport(s, { query_folder: 'FA' }, session)
    expect(e.user_id).toBe(folderAdmin.id)
    const json = (await walkResults(s, e.id, session)).rows
    expect(json.map((r) => r.id)).toEqual(idsOf('one', 'two'))
    await expectCsvMatches(e.results_url, json)
  })

  it('refuses a folder admin anything outside their folders', async () => {
    for (const body of [
      { query_folder: 'fb' },
      { query_folder: 'fab' },
      { query_folder: 'fa,fb' },
      { query_path: 'top.txt' },
      { query_path: 'fa/one.txt,fb/four.txt' },
      { query_folder: 'fa', query_path: 'fb/four.txt' },
    ]) {
      const r = await createExport(s, body, folderAdminKey)
      expect({ body, status: r.status, type: r.body?.type }).toEqual({
        body,
        status: 403,
        type: 'not-authorized/folder-admin-permission-required',
      })
    }
    // The root folder is the whole site: never a folder admin's.
    const root = await createExport(s, { query_folder: '/' }, folderAdminKey)
    expect(root.status, root.text).toBe(403)
    expect([
      'not-authorized/folder-admin-permission-required',
      'not-authorized/non-admins-must-query-by-folder-or-path',
    ]).toContain(root.body.type)
  })

  it('requires a folder or path of anyone but site admins, before anything else', async () => {
    for (const [who, body] of [
      [folderAdminKey, {}],
      [folderAdminKey, { query_status: '500', query_success: false }],
      [folderAdminKey, { query_folder: ',' }],
      [otherAdminKey, { query_request_method: 'post' }],
      [plainKey, {}],
    ] as const) {
      const r = await createExport(s, body, who)
      expect({ body, status: r.status, type: r.body?.type }).toEqual({
        body,
        status: 403,
        type: 'not-authorized/non-admins-must-query-by-folder-or-path',
      })
    }
  })

  it('refuses a user who administers nothing, even in a folder where they have full permission', async () => {
    for (const body of [{ query_folder: 'fa' }, { query_path: 'fa/one.txt' }]) {
      expectError(
        await createExport(s, body, plainKey),
        403,
        'not-authorized/folder-admin-permission-required',
      )
    }
    const session = { session: await login(s, plain.username, plain.password) }
    expectError(
      await createExport(s, { query_folder: 'fa' }, session),
      403,
      'not-authorized/folder-admin-permission-required',
    )
  })

  it('shows a folder admin only their own exports', async () => {
    const mine = await readyExport(s, { query_folder: 'fa' }, folderAdminKey)
    const theirs = await readyExport(s, { query_folder: 'fb' }, otherAdminKey)
    const siteWide = await readyExport(s, { query_folder: 'fa' }, site())
    const admins = await readyExport(s, { query_folder: 'fa' }, siteAdminKey)
    expect((await getExport(s, mine.id, folderAdminKey)).status).toBe(200)
    for (const id of [theirs.id, siteWide.id, admins.id]) {
      expectError(await getExport(s, id, folderAdminKey), 404, 'not-found')
      expectError(await getResults(s, id, folderAdminKey), 404, 'not-found')
    }
    expectError(await getExport(s, mine.id, otherAdminKey), 404, 'not-found')
    expectError(await getResults(s, mine.id, plainKey), 404, 'not-found')
  })

  it('refuses a user’s own export once they no longer administer its folder', async () => {
    const u = await makeUser(s)
    await grant(s, u.id, 'fa', 'admin')
    const key = { key: (await makeKey(s, u.id)).key }
    const e = await readyExport(s, { query_folder: 'fa/sub' }, key)
    expect((await getResults(s, e.id, key)).status).toBe(200)
    await s.container.db.deleteFrom('permissions').where('user_id', '=', u.id).execute()
    const type = 'not-authorized/folder-admin-permission-required'
    expectError(await getResults(s, e.id, key), 403, type)
    expectError(await getExport(s, e.id, key), 403, type)
  })

  it('takes user_id 0 or one’s own id, refuses another user’s id to non-admins', async () => {
    for (const user_id of [0, folderAdmin.id]) {
      const r = await createExport(s, { user_id, query_folder: 'fa' }, folderAdminKey)
      expect(r.status, r.text).toBe(201)
      expect(r.body.user_id).toBe(folderAdmin.id)
    }
    for (const user_id of [otherAdmin.id, siteAdmin.id, 99_999_999]) {
      expectError(
        await createExport(s, { user_id, query_folder: 'fa' }, folderAdminKey),
        403,
        'not-authorized/user-id-without-site-admin',
      )
    }
    const mine = await readyExport(s, { query_folder: 'fa' }, folderAdminKey)
    expect((await getResults(s, mine.id, folderAdminKey, { user_id: 0 })).status).toBe(200)
    expectError(
      await getResults(s, mine.id, folderAdminKey, { user_id: otherAdmin.id }),
      403,
      'not-authorized/user-id-without-site-admin',
    )
  })

  it('lets a site admin export as another user, within that user’s limits', async () => {
    const r = await createExport(s, { user_id: folderAdmin.id, query_folder: 'fa' }, siteAdminKey)
    expect(r.status, r.text).toBe(201)
    expect(r.body.user_id).toBe(folderAdmin.id)
    expectError(
      await createExport(s, { user_id: folderAdmin.id, query_folder: 'fb' }, siteAdminKey),
      403,
      'not-authorized/folder-admin-permission-required',
    )
    expectError(
      await createExport(s, { user_id: folderAdmin.id }, siteAdminKey),
      403,
      'not-authorized/non-admins-must-query-by-folder-or-path',
    )
    expectError(
      await createExport(s, { user_id: 99_999_999, query_folder: 'fa' }, siteAdminKey),
      404,
      'not-found/user-not-found',
    )
    // The export is that user's: they see it.
    expect((await getExport(s, r.body.id, folderAdminKey)).status).toBe(200)
  })

  it('refuses keys that reach only file operations or one folder, and requests without credentials', async () => {
    const e = await readyExport(s, { query_folder: 'fa' }, siteAdminKey)
    const refusals: [Auth, number, string][] = [
      [
        { key: (await makeKey(s, siteAdmin.id, { permission_set: 'desktop_app' })).key },
        403,
        'not-authorized/api-key-only-for-desktop-app',
      ],
      [
        { key: (await makeKey(s, siteAdmin.id, { path: 'fa' })).key },
        403,
        'not-authorized/api-key-is-path-restricted',
      ],
      [
        { key: (await makeKey(s, folderAdmin.id, { path: 'fa' })).key },
        403,
        'not-authorized/api-key-is-path-restricted',
      ],
      [
        { key: (await makeKey(s, siteAdmin.id, { permission_set: 'none' })).key },
        403,
        'not-authorized/full-permission-required',
      ],
    ]
    for (const [who, status, type] of refusals) {
      expectError(await createExport(s, { query_folder: 'fa' }, who), status, type)
      expectError(await getExport(s, e.id, who), status, type)
      expectError(await getResults(s, e.id, who), status, type)
    }
    const none = 'not-authenticated/authentication-required'
    expectError(
      await call(s, 'POST', '/action_notification_exports', { body: { query_folder: 'fa' } }),
      401,
      none,
    )
    expectError(await call(s, 'GET', `/action_notification_exports/${e.id}`), 401, none)
    expectError(
      await call(s, 'GET', `/action_notification_export_results?action_notification_export_id=${e.id}`),
      401,
      none,
    )
  })
})
