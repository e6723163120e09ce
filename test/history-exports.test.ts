import { XMLParser } from 'fast-xml-parser'
import { describe, expect, it } from 'vitest'
import {
  allHistoryResults,
  createHistoryExport,
  csvRowOfHistory,
  fetchCsvRows,
  HISTORY_RESULT_FIELDS,
  historyExportIds,
  historyResults,
  readyHistoryExport,
  recordAt,
  unique,
  upload,
} from './helpers/history-export-fixtures.js'
import { call, dialects, expectError, grant, login, makeKey, makeUser, useServer } from './helpers/server.js'

const DAY = 86_400_000

describe.each(dialects)('history exports over HTTP (%s)', (dialect) => {
  const admin = () => ({ key: s.adminKey })
  const s = useServer(dialect)

  it('exports every stored action, older than 24 hours too, oldest first, with the SDK’s fields', async () => {
    const folder = unique('hx')
    const user = await makeUser(s)
    const old = await recordAt(s, 40 * DAY, upload(`${folder}/old.txt`, 41), { user, ip: '203.0.113.9' })
    const moved = await recordAt(
      s,
      2 * DAY,
      {
        action: 'move',
        display: 'Moved old.txt',
        path: `${folder}/sub/new.txt`,
        source: `${folder}/old.txt`,
        destination: `${folder}/sub/new.txt`,
        targets: [{ type: 'file', id: 41, name: 'new.txt' }],
      },
      { user, interface: 'web' },
    )
    const recent = await recordAt(s, 60_000, upload(`${folder}/recent.txt`, 42))
    const e = await readyHistoryExport(s, { query_folder: folder }, admin())
    expect(e).toMatchObject({
      history_version: '1',
      status: 'ready',
      query_folder: folder,
      query_action: null,
      start_at: null,
      end_at: null,
      user_id: null,
      failure_reason: null,
      results_count: 3,
    })
    const rows = await allHistoryResults(s, e.id, admin())
    expect(rows.map((r) => r.id)).toEqual([old.id, moved.id, recent.id])
    expect(Object.keys(rows[0])).toEqual(HISTORY_RESULT_FIELDS)
    const seconds = Math.floor(old.at / 1000)
    expect(rows[0]).toEqual({
      id: old.id,
      created_at: seconds,
      created_at_iso: new Date(seconds * 1000).toISOString().replace('.000Z', 'Z'),
      user_id: user.id,
      file_id: 41,
      parent_id: null,
      path: `${folder}/old.txt`,
      folder,
      src: null,
      destination: null,
      ip: '203.0.113.9',
      username: user.username,
      user_is_from_parent_site: false,
      action: 'create',
      failure_type: null,
      interface: 'restapi',
      target_id: null,
      target_name: null,
      target_permission: null,
      target_recursive: null,
      target_expires_at: null,
      target_expires_at_iso: null,
      target_permission_set: null,
      target_platform: null,
      target_username: null,
      target_user_id: null,
    })
    expect(rows[1]).toMatchObject({
      action: 'move',
      src: `${folder}/old.txt`,
      destination: `${folder}/sub/new.txt`,
      folder: `${folder}/sub`,
      interface: 'web',
    })
    // The /history endpoints stop at 24 hours; the export does not.
    const recentOnly = await call(s, 'GET', `/history/folders/${folder}`, admin())
    expect(recentOnly.body.map((a: any) => a.id)).toEqual([recent.id])
  })

  it('names the record acted on: a user or key as target_id and target_name', async () => {
    const name = unique('target')
    const a = await recordAt(s, 5 * DAY, {
      action: 'user_create',
      display: `Created user ${name}`,
      targets: [{ type: 'user', id: 99, name }],
    })
    const e = await readyHistoryExport(
      s,
      { query_action: 'user_create', start_at: new Date(a.at).toISOString() },
      admin(),
    )
    const rows = await allHistoryResults(s, e.id, admin())
    expect(rows.find((r) => r.id === a.id)).toMatchObject({
      target_id: 99,
      target_name: name,
      file_id: null,
      path: '',
    })
  })

  it('answers each supported query field, values separated by commas, fields combined with AND', async () => {
    const folder = unique('hq')
    const alice = await makeUser(s, { username: unique('Alice') })
    const bob = await makeUser(s)
    const a = await recordAt(s, 3 * DAY, upload(`${folder}/a.txt`), { user: alice, ip: '192.0.2.1' })
    const b = await recordAt(
      s,
      2 * DAY,
      { action: 'read', display: 'Downloaded a.txt', path: `${folder}/a.txt` },
      {
        user: bob,
        ip: '192.0.2.2',
        interface: 'web',
      },
    )
    const c = await recordAt(
      s,
      DAY,
      {
        action: 'copy',
        display: 'Copied a.txt',
        path: `${folder}/sub/c.txt`,
        source: `${folder}/a.txt`,
        destination: `${folder}/sub/c.txt`,
        targets: [{ type: 'file', id: 3, name: 'c.txt' }],
      },
      { user: alice, ip: '192.0.2.3', interface: 'robot' },
    )
    const d = await recordAt(s, 1000, upload(`${folder}-sibling/d.txt`), { user: bob })
    const inFolder = { query_folder: folder }
    const ids = (body: Record<string, unknown>) => historyExportIds(s, { ...inFolder, ...body })

    expect(await historyExportIds(s, inFolder)).toEqual([a.id, b.id, c.id])
    expect(await ids({ query_action: 'create' })).toEqual([a.id])
    expect(await ids({ query_action: 'read,COPY' })).toEqual([b.id, c.id])
    expect(await ids({ query_interface: 'web,robot' })).toEqual([b.id, c.id])
    expect(await ids({ query_user_id: `${alice.id}` })).toEqual([a.id, c.id])
    expect(await ids({ query_user_id: `${bob.id},,` })).toEqual([b.id])
    expect(await ids({ query_path: `/${folder.toUpperCase()}/A.TXT/` })).toEqual([a.id, b.id])
    expect(await ids({ query_folder: `${folder}/sub` })).toEqual([c.id])
    expect(await ids({ query_src: `${folder}/a.txt` })).toEqual([c.id])
    expect(await ids({ query_destination: `${folder}/sub/c.txt,${folder}/nowhere` })).toEqual([c.id])
    expect(await ids({ query_ip: '192.0.2.2,192.0.2.3' })).toEqual([b.id, c.id])
    expect(await ids({ query_username: alice.username.toUpperCase() })).toEqual([a.id, c.id])
    expect(await ids({ query_action: 'create,copy', query_interface: 'robot' })).toEqual([c.id])
    expect(await ids({ query_action: 'destroy' })).toEqual([])
    // start_at inclusive, end_at exclusive.
    const iso = (ms: number) => new Date(ms).toISOString()
    expect(await ids({ start_at: iso(b.at), end_at: iso(c.at) })).toEqual([b.id])
    // The sibling that shares the folder's name as a prefix is outside it.
    expect(await historyExportIds(s, { query_folder: `${folder}-sibling` })).toEqual([d.id])

    const failed = unique('nobody')
    const f = await recordAt(s, 2 * DAY, {
      action: 'failedlogin',
      display: `Failed login as ${failed}`,
      failureType: 'username_not_found',
      userId: null,
      username: failed,
    })
    expect(
      await historyExportIds(s, { query_username: failed, query_failure_type: 'username_not_found' }),
    ).toEqual([f.id])
    expect(await historyExportIds(s, { query_username: failed, query_failure_type: 'locked_out' })).toEqual(
      [],
    )
  })

  it('refuses the Files.com query fields Wharf cannot answer, naming the field', async () => {
    for (const field of [
      'query_file_id',
      'query_parent_id',
      'query_target_id',
      'query_target_name',
      'query_target_permission',
      'query_target_user_id',
      'query_target_username',
      'query_target_platform',
      'query_target_permission_set',
    ]) {
      const r = await createHistoryExport(s, { [field]: '12' }, admin())
      expectError(r, 400, 'bad-request/request-params-invalid')
      expect(r.body.error).toContain(field)
    }
    // They are not parameters of this endpoint (nor in its Swagger document), even empty.
    const r = await createHistoryExport(s, { query_target_id: '', query_folder: 'x' }, admin())
    expectError(r, 400, 'bad-request/request-params-invalid')
    expect(r.body.error).toContain('query_target_id')
  })

  it('refuses bad input with the exact error types', async () => {
    const post = (body: Record<string, unknown>) => createHistoryExport(s, body, admin())
    expectError(await post({ query_bogus: 'x' }), 400, 'bad-request/request-params-invalid')
    expectError(await post({ query_user_id: 'alice' }), 400, 'bad-request/request-params-invalid')
    expectError(await post({ query_path: 'a/../b' }), 400, 'bad-request/invalid-path')
    expectError(await post({ start_at: 'yesterday' }), 400, 'bad-request/datetime-parse')
    const late = await post({ start_at: '2025-03-02', end_at: '2025-03-01' })
    expectError(late, 422, 'processing-failure/model-save-error')
    expect(Object.keys(late.body.model_errors)).toEqual(['end_at'])
    expectError(await historyResults(s, 999_999_999, admin()), 404, 'not-found')
    expectError(
      await call(s, 'GET', '/history_export_results', admin()),
      400,
      'bad-request/request-params-required',
    )
    const e = await readyHistoryExport(s, { query_folder: unique('empty') }, admin())
    const none = await historyResults(s, e.id, admin())
    expect(none.status).toBe(200)
    expect(none.body).toEqual([])
    expect(none.headers.get('X-Service-Cursor-Next')).toBeNull()
    expectError(
      await historyResults(s, e.id, admin(), { per_page: 0 }),
      400,
      'bad-request/request-params-invalid',
    )
    expectError(await historyResults(s, e.id, admin(), { cursor: 'nope' }), 400, 'bad-request/invalid-cursor')
    // A webhook-log export is not a history export.
    const hooks = await call(s, 'POST', '/action_notification_exports', { ...admin(), body: {} })
    expect(hooks.status).toBe(201)
    expectError(await call(s, 'GET', `/history_exports/${hooks.body.id}`, admin()), 404, 'not-found')
    expectError(await historyResults(s, hooks.body.id, admin()), 404, 'not-found')
  })

  it('lets site admins export anything and others only inside the folders they administer', async () => {
    const folder = unique('ha')
    await recordAt(s, 3 * DAY, upload(`${folder}/x.txt`))
    const folderAdmin = await makeUser(s)
    await grant(s, folderAdmin.id, folder, 'admin')
    const fa = { key: (await makeKey(s, folderAdmin.id)).key }
    const reader = await makeUser(s)
    await grant(s, reader.id, folder, 'full')
    const plain = { key: (await makeKey(s, reader.id)).key }
    const siteAdmin = await makeUser(s, { site_admin: true })
    const sa = { session: await login(s, siteAdmin.username, siteAdmin.password) }

    expectError(
      await createHistoryExport(s, { query_action: 'create' }, fa),
      403,
      'not-authorized/non-admins-must-query-by-folder-or-path',
    )
    expectError(
      await createHistoryExport(s, { query_folder: `${folder}-other` }, fa),
      403,
      'not-authorized/folder-admin-permission-required',
    )
    expectError(
      await createHistoryExport(s, { query_folder: folder, query_path: 'elsewhere/x.txt' }, fa),
      403,
      'not-authorized/folder-admin-permission-required',
    )
    expectError(
      await createHistoryExport(s, { query_folder: folder }, plain),
      403,
      'not-authorized/folder-admin-permission-required',
    )
    expectError(
      await createHistoryExport(s, { query_action: 'read' }, plain),
      403,
      'not-authorized/non-admins-must-query-by-folder-or-path',
    )
    expectError(
      await createHistoryExport(s, { query_folder: folder, user_id: siteAdmin.id }, fa),
      403,
      'not-authorized/user-id-without-site-admin',
    )
    expectError(await createHistoryExport(s, { user_id: 999_999_999 }, sa), 404, 'not-found/user-not-found')
    const desktop = { key: (await makeKey(s, folderAdmin.id, { permission_set: 'desktop_app' })).key }
    expectError(
      await createHistoryExport(s, { query_folder: folder }, desktop),
      403,
      'not-authorized/api-key-only-for-desktop-app',
    )
    const restricted = { key: (await makeKey(s, folderAdmin.id, { path: folder })).key }
    expectError(
      await createHistoryExport(s, { query_folder: folder }, restricted),
      403,
      'not-authorized/api-key-is-path-restricted',
    )

    const own = await readyHistoryExport(s, { query_folder: `/${folder.toUpperCase()}/sub/` }, fa)
    expect(own.user_id).toBe(folderAdmin.id)
    // A site admin sees everyone's exports; others only their own.
    const bySiteAdmin = await readyHistoryExport(s, {}, sa)
    expect(bySiteAdmin.user_id).toBe(siteAdmin.id)
    expect((await call(s, 'GET', `/history_exports/${own.id}`, sa)).status).toBe(200)
    expectError(await call(s, 'GET', `/history_exports/${bySiteAdmin.id}`, fa), 404, 'not-found')
    expectError(await historyResults(s, bySiteAdmin.id, fa), 404, 'not-found')
    expectError(await historyResults(s, own.id, plain), 404, 'not-found')
    // A site admin naming a user makes the export as that user, within their limits.
    expectError(
      await createHistoryExport(s, { user_id: folderAdmin.id }, sa),
      403,
      'not-authorized/non-admins-must-query-by-folder-or-path',
    )
    const asUser = await readyHistoryExport(s, { user_id: folderAdmin.id, query_folder: folder }, sa)
    expect(asUser.user_id).toBe(folderAdmin.id)
    expect((await call(s, 'GET', `/history_exports/${asUser.id}`, fa)).status).toBe(200)
    // The upload, and the grants and key recorded on the folder.
    const seen = (await historyResults(s, asUser.id, fa)).body as any[]
    expect(seen.map((r) => r.path)).toContain(`${folder}/x.txt`)
    expect(seen.every((r) => r.path === folder || r.path.startsWith(`${folder}/`))).toBe(true)
    // Once they no longer administer the folder, their exports of it are refused.
    await s.container.db.deleteFrom('permissions').where('user_id', '=', folderAdmin.id).execute()
    const type = 'not-authorized/folder-admin-permission-required'
    expectError(await call(s, 'GET', `/history_exports/${own.id}`, fa), 403, type)
    expectError(await historyResults(s, own.id, fa), 403, type)
    expect((await call(s, 'GET', `/history_exports/${own.id}`, sa)).status).toBe(200)
  })

  it('writes the same records to the CSV as the JSON results, and pages them forward one by one', async () => {
    const folder = unique('hc')
    const user = await makeUser(s, { username: unique('csv"user,with') })
    for (let i = 0; i < 5; i++)
      await recordAt(s, (10 - i) * DAY, upload(`${folder}/f "${i}", line\nbreak.txt`, 100 + i), { user })
    await recordAt(s, DAY, { action: 'destroy', display: 'Deleted', path: `${folder}/gone`, targets: [] })
    const e = await readyHistoryExport(s, { query_folder: folder }, admin())
    const all = await allHistoryResults(s, e.id, admin())
    expect(all).toHaveLength(6)
    const oneByOne = await allHistoryResults(s, e.id, admin(), 1)
    expect(oneByOne).toEqual(all)
    const { res, rows } = await fetchCsvRows(e.results_url)
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="history-export-${e.id}.csv"`)
    expect(rows[0]).toEqual(HISTORY_RESULT_FIELDS)
    expect(rows.slice(1)).toEqual(all.map(csvRowOfHistory))
    // The link works without credentials, but not once tampered with.
    const tampered = new URL(e.results_url)
    const signature = tampered.searchParams.get('signature')!
    tampered.searchParams.set('signature', `${signature.startsWith('x') ? 'y' : 'x'}${signature.slice(1)}`)
    const refused = await fetch(tampered)
    expect(refused.status).toBe(401)
    expect(((await refused.json()) as { type: string }).type).toBe(
      'not-authenticated/invalid-or-expired-code',
    )
  })

  it('speaks XML: a body of fields in, the singular and plural roots out', async () => {
    const folder = unique('hxml')
    await recordAt(s, 3 * DAY, upload(`${folder}/a.txt`))
    const made = await call(s, 'POST', '/history_exports.xml', {
      ...admin(),
      raw: `<history-export><query_folder>${folder}</query_folder><user_id>0</user_id></history-export>`,
      contentType: 'application/xml',
    })
    expect(made.status, made.text).toBe(201)
    const xml = new XMLParser({ ignoreAttributes: false })
    const doc = xml.parse(made.text)
    expect(doc['history-export'].query_folder).toBe(folder)
    expect(doc['history-export'].status).toBe('building')
    const id = Number(doc['history-export'].id['#text'])
    await readyHistoryExport(s, { query_folder: folder }, admin())
    let shown: any
    for (let i = 0; i < 400; i++) {
      shown = xml.parse((await call(s, 'GET', `/history_exports/${id}.xml`, admin())).text)['history-export']
      if (shown.status !== 'building') break
      await new Promise((r) => setTimeout(r, 25))
    }
    expect(shown.status).toBe('ready')
    const r = await call(s, 'GET', `/history_export_results.xml?history_export_id=${id}`, admin())
    expect(r.status).toBe(200)
    const list = xml.parse(r.text)['history-export-results']
    expect(list['@_type']).toBe('array')
    expect(list['history-export-result'].path).toBe(`${folder}/a.txt`)
    expect(list['history-export-result'].user_is_from_parent_site['@_type']).toBe('boolean')
  })
})
