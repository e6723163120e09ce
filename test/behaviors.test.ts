import { beforeAll, describe, expect, it } from 'vitest'
import { findRow, makeFile, makeFolder } from './helpers/file-rows.js'
import { req, target, uploaded, uploadRefusal } from './helpers/files.js'
import { call, dialects, expectError, grant, makeKey, makeUser, useServer } from './helpers/server.js'

const ext = (path: string, extensions: string[], more: Record<string, unknown> = {}) => ({
  path,
  behavior: 'limit_file_extensions',
  value: { extensions, mode: 'allow' },
  ...more,
})

describe.each(dialects)('folder behaviors (%s)', (dialect) => {
  const s = useServer(dialect)
  /** Folder admin of `acme`. */
  let adminKey: string
  let folderAdminId: number
  /** Full permission on `acme`, admin of nothing. */
  let userKey: string

  const post = (body: unknown, key = s.adminKey) => call(s, 'POST', '/behaviors', { key, body })

  beforeAll(async () => {
    const folderAdmin = await makeUser(s, { username: 'acme-admin' })
    await grant(s, folderAdmin.id, 'acme', 'admin')
    folderAdminId = folderAdmin.id
    adminKey = (await makeKey(s, folderAdmin.id)).key
    const plain = await makeUser(s, { username: 'acme-user' })
    await grant(s, plain.id, 'acme', 'full')
    userKey = (await makeKey(s, plain.id)).key
  })

  describe('the resource', () => {
    it('creates, shows, changes and deletes a behavior; value may be JSON text as the SDK sends it', async () => {
      const r = await post({
        path: '/crud/in/',
        behavior: 'limit_file_extensions',
        value: JSON.stringify({ extensions: ['.CSV', 'pdf'] }),
        name: 'Only data',
        description: 'CSV and PDF only',
        recursive: true,
      })
      expect(r.status).toBe(201)
      expect(r.body).toEqual({
        id: r.body.id,
        path: 'crud/in',
        attachment_url: null,
        behavior: 'limit_file_extensions',
        name: 'Only data',
        description: 'CSV and PDF only',
        value: { extensions: ['csv', 'pdf'], mode: 'allow' },
        disable_parent_folder_behavior: false,
        recursive: true,
      })
      const shown = await call(s, 'GET', `/behaviors/${r.body.id}`, { key: s.adminKey })
      expect(shown.body).toEqual(r.body)

      const patched = await call(s, 'PATCH', `/behaviors/${r.body.id}`, {
        key: s.adminKey,
        body: { ...r.body, value: { extensions: ['txt'], mode: 'deny' }, recursive: false },
      })
      expect(patched.status).toBe(200)
      expect(patched.body.value).toEqual({ extensions: ['txt'], mode: 'deny' })
      expect(patched.body.recursive).toBe(false)
      expect((await call(s, 'GET', `/behaviors/${r.body.id}`, { key: s.adminKey })).body).toEqual(
        patched.body,
      )

      const changedPath = await call(s, 'PATCH', `/behaviors/${r.body.id}`, {
        key: s.adminKey,
        body: { path: 'elsewhere' },
      })
      expectError(changedPath, 400, 'bad-request/request-params-invalid')

      expect((await call(s, 'DELETE', `/behaviors/${r.body.id}`, { key: s.adminKey })).status).toBe(204)
      expectError(await call(s, 'GET', `/behaviors/${r.body.id}`, { key: s.adminKey }), 404, 'not-found')
    })

    it('validates each type’s value with model-save-error naming the field', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ behavior: 'limit_file_extensions', value: {} }, 'value.extensions'],
        [{ behavior: 'limit_file_extensions', value: { extensions: ['csv'], mode: 'maybe' } }, 'value.mode'],
        [{ behavior: 'limit_file_extensions', value: { extensions: ['a/b'] } }, 'value.extensions'],
        [
          { behavior: 'limit_file_extensions', value: { extensions: ['csv'], colour: 'red' } },
          'value.colour',
        ],
        [{ behavior: 'limit_file_regex', value: { regex: '(' } }, 'value.regex'],
        [{ behavior: 'limit_file_regex', value: { regex: '^(a+)+$' } }, 'value.regex'],
        [{ behavior: 'limit_file_regex', value: { regex: '^(a|aa)*$' } }, 'value.regex'],
        [{ behavior: 'limit_file_regex', value: { regex: 'x'.repeat(257) } }, 'value.regex'],
        [{ behavior: 'limit_filename_length', value: { max_length: 0 } }, 'value.max_length'],
        [{ behavior: 'limit_filename_length', value: { max_length: 'ten' } }, 'value.max_length'],
        [{ behavior: 'webhook', value: {} }, 'value.urls'],
        [{ behavior: 'webhook', value: { urls: ['ftp://x.example'] } }, 'value.urls'],
        [{ behavior: 'webhook', value: { urls: ['https://x.example'], method: 'PUT' } }, 'value.method'],
        [{ behavior: 'webhook', value: { urls: ['https://x.example'], encoding: 'YAML' } }, 'value.encoding'],
        [
          { behavior: 'webhook', value: { urls: ['https://x.example'], triggers: ['Explode'] } },
          'value.triggers',
        ],
        [
          { behavior: 'webhook', value: { urls: ['https://x.example'], headers: { 'bad name': 'x' } } },
          'value.headers',
        ],
        [
          { behavior: 'webhook', value: { urls: ['https://x.example'], exclude_filenames: [''] } },
          'value.exclude_filenames',
        ],
        [{ behavior: 'webhook', value: '{not json' }, 'value'],
        [{ behavior: 'webhook', value: '[1]' }, 'value'],
        [{ behavior: 'file_expiration', value: { days_to_retain: 0 } }, 'value.days_to_retain'],
        [{ behavior: 'no_such_type', value: {} }, 'behavior'],
      ]
      for (const [body, field] of cases) {
        const r = await post({ path: 'validation', ...body })
        expectError(r, 422, 'processing-failure/model-save-error')
        expect(Object.keys(r.body.model_errors), JSON.stringify(body)).toContain(field)
      }
      for (const regex of [
        '^[A-Z]{3}-\\d+\\.txt$',
        '^(invoice|receipt)-\\d{4}\\.pdf$',
        '^(\\d{2}){3}$',
        '^(?:ab)+[(]a+[)]+$',
        '\\.(csv|CSV)?$',
      ]) {
        const r = await post({ path: 'validation/ok', behavior: 'limit_file_regex', value: { regex } })
        expect(r.status, regex).toBe(201)
      }
      for (const regex of ['^(a{1,5})+$', '^(a?a?)+$', '^((ab)*c)+$', '^(x|y)*$']) {
        const r = await post({ path: 'validation', behavior: 'limit_file_regex', value: { regex } })
        expect(Object.keys(r.body.model_errors ?? {}), regex).toEqual(['value.regex'])
      }
      const unsupported = await post({ path: 'validation', behavior: 'watermark' })
      expect(unsupported.body.model_errors.behavior[0]).toContain(
        'supported: webhook, limit_file_extensions, limit_file_regex, limit_filename_length, append_timestamp, override_upload_filename, lock_subfolders, create_user_folders, file_expiration)',
      )
      expectError(await post({ behavior: 'webhook' }), 400, 'bad-request/request-params-required')
      expectError(await post({ path: 'x' }), 400, 'bad-request/request-params-required')
      expectError(await post({ path: 'a/../b', behavior: 'webhook' }), 400, 'bad-request/invalid-path')
      const id = (await post(ext('validation', ['csv']))).body.id
      const bad = await call(s, 'PATCH', `/behaviors/${id}`, {
        key: s.adminKey,
        body: { value: { extensions: [] } },
      })
      expectError(bad, 422, 'processing-failure/model-save-error')
      expect(Object.keys(bad.body.model_errors)).toEqual(['value.extensions'])
      expectError(
        await call(s, 'PATCH', '/behaviors/999999', { key: s.adminKey, body: {} }),
        404,
        'not-found',
      )
      expectError(await call(s, 'DELETE', '/behaviors/999999', { key: s.adminKey }), 404, 'not-found')
    })

    it('creates a webhook behavior, its header values and token hidden from the answer', async () => {
      const value = {
        urls: ['https://hooks.example/a', 'https://hooks.example/b'],
        method: 'POST',
        triggers: ['Upload', 'destroy'],
        triggering_filenames: ['*.csv'],
        exclude_filenames: ['~*'],
        encoding: 'XML',
        headers: { 'X-Api-Key': 'secret-1' },
        body: { partner: 'acme' },
        verification_token: 'tok-1',
      }
      const r = await post({ path: 'hooked', behavior: 'webhook', value })
      expect(r.status).toBe(201)
      expect(r.body.value).toEqual({ ...value, headers: { 'X-Api-Key': null }, verification_token: null })
      expect(r.text).not.toContain('secret-1')
      expect(r.text).not.toContain('tok-1')
      const row = await s.container.db
        .selectFrom('behaviors')
        .select('value')
        .where('id', '=', r.body.id)
        .executeTakeFirstOrThrow()
      expect(JSON.parse(row.value)).toEqual(value)
    })

    it('refuses webhook headers Wharf sets itself and body fields that would replace the payload’s', async () => {
      for (const [v, field] of [
        [{ headers: { 'Content-Length': '1' } }, 'value.headers'],
        [{ headers: { 'X-Service-Signature': 'x' } }, 'value.headers'],
        [{ headers: { Host: 'x' } }, 'value.headers'],
        [{ body: { path: 'forged' } }, 'value.body'],
        [{ body: { '1st': 'x' } }, 'value.body'],
      ] as const) {
        const r = await post({
          path: 'hooked2',
          behavior: 'webhook',
          value: { urls: ['https://x.example'], ...v },
        })
        expectError(r, 422, 'processing-failure/model-save-error')
        expect(Object.keys(r.body.model_errors)).toEqual([field])
      }
    })

    it('never shows a stored webhook’s header values or token; null sent back keeps them', async () => {
      const now = Date.now()
      const stored = {
        urls: ['https://hooks.example/a'],
        method: 'POST',
        triggers: [],
        triggering_filenames: [],
        exclude_filenames: [],
        encoding: 'JSON',
        headers: { 'X-Api-Key': 'secret-1' },
        body: {},
        verification_token: 'tok-1',
      }
      const { id } = await s.container.db
        .insertInto('behaviors')
        .values({
          site_id: s.container.site.id,
          path: 'hooked/stored',
          path_lower: 'hooked/stored',
          behavior: 'webhook',
          value: JSON.stringify(stored),
          recursive: 0,
          disable_parent_folder_behavior: 0,
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow()
      const shown = await call(s, 'GET', `/behaviors/${id}`, { key: s.adminKey })
      expect(shown.body.value).toEqual({
        ...stored,
        headers: { 'X-Api-Key': null },
        verification_token: null,
      })
      expect(shown.text).not.toContain('secret-1')
      expect(shown.text).not.toContain('tok-1')
      const saved = await call(s, 'PATCH', `/behaviors/${id}`, { key: s.adminKey, body: shown.body })
      expect(saved.status).toBe(200)
      const row = await s.container.db
        .selectFrom('behaviors')
        .select('value')
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
      expect(JSON.parse(row.value)).toEqual(stored)
    })

    it('lets folder admins manage behaviors inside their folders only, and nobody else', async () => {
      const mine = await post(ext('acme/inbox', ['csv']), adminKey)
      expect(mine.status).toBe(201)
      expectError(
        await post(ext('other', ['csv']), adminKey),
        403,
        'not-authorized/folder-admin-permission-required',
      )
      expectError(
        await post(ext('acme', ['csv']), userKey),
        403,
        'not-authorized/folder-admin-permission-required',
      )
      expectError(
        await call(s, 'GET', '/behaviors', { key: userKey }),
        403,
        'not-authorized/folder-admin-permission-required',
      )
      expectError(
        await call(s, 'GET', `/behaviors/${mine.body.id}`, { key: userKey }),
        403,
        'not-authorized/folder-admin-permission-required',
      )
      const outside = await post(ext('not-acme', ['csv']))
      expectError(
        await call(s, 'GET', `/behaviors/${outside.body.id}`, { key: adminKey }),
        403,
        'not-authorized/folder-admin-permission-required',
      )
      expectError(
        await call(s, 'DELETE', `/behaviors/${outside.body.id}`, { key: adminKey }),
        403,
        'not-authorized/folder-admin-permission-required',
      )
      expectError(
        await call(s, 'GET', '/behaviors/folders/not-acme?ancestor_behaviors=true', { key: adminKey }),
        403,
        'not-authorized/folder-admin-permission-required',
      )
      const inherited = await call(s, 'GET', '/behaviors/folders/acme/inbox/deep?ancestor_behaviors=true', {
        key: adminKey,
      })
      expect(inherited.body.map((b: { id: number }) => b.id)).toEqual([])
      expectError(
        await call(s, 'GET', '/behaviors/folders/acme?ancestor_behaviors=yes', { key: adminKey }),
        400,
        'bad-request/request-params-invalid',
      )
      const root = await call(s, 'GET', '/behaviors/folders/', { key: s.adminKey })
      expect(root.status).toBe(200)
      expect(root.body).toEqual([])
      const listed = await call(s, 'GET', '/behaviors', { key: adminKey })
      expect(listed.status).toBe(200)
      expect(listed.body.map((b: { path: string }) => b.path)).toEqual(['acme/inbox'])
      const restricted = (await makeKey(s, folderAdminId, { path: 'acme/keyed' })).key
      expectError(
        await post(ext('acme/elsewhere', ['csv']), restricted),
        403,
        'not-authorized/api-key-is-path-restricted',
      )
      // A key restricted to a folder reaches the file operations only, as for every resource.
      expectError(
        await post(ext('acme/keyed/in', ['csv']), restricted),
        403,
        'not-authorized/api-key-is-path-restricted',
      )
      expect((await call(s, 'GET', '/behaviors', { key: '0'.repeat(64) })).status).toBe(401)
    })

    it('lists by type and sort, a page at a time', async () => {
      for (let i = 0; i < 5; i++)
        await post({ path: `paged/${i}`, behavior: 'limit_filename_length', value: { max_length: 10 + i } })
      const seen: number[] = []
      let cursor: string | null = null
      for (let pages = 0; pages < 5; pages++) {
        const q: string = `/behaviors?per_page=2&filter[behavior]=limit_filename_length${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
        const r = await call(s, 'GET', q, { key: s.adminKey })
        expect(r.status).toBe(200)
        seen.push(...r.body.map((b: { value: { max_length: number } }) => b.value.max_length))
        cursor = r.headers.get('x-files-cursor-next')
        if (!cursor) break
      }
      expect(seen).toEqual([10, 11, 12, 13, 14])
      const sorted = await call(s, 'GET', '/behaviors?sort_by[behavior]=desc&per_page=10000', {
        key: s.adminKey,
      })
      const types = sorted.body.map((b: { behavior: string }) => b.behavior)
      expect(types).toEqual([...types].sort().reverse())
      expectError(
        await call(s, 'GET', '/behaviors?filter[path]=x', { key: s.adminKey }),
        400,
        'bad-request/invalid-filter-field',
      )
    })

    it('speaks XML: value is JSON text both ways', async () => {
      const xml =
        '<behavior><path>xml/in</path><behavior>limit_file_regex</behavior>' +
        '<value>{"regex": "^[a-z]+\\\\.txt$"}</value><recursive>true</recursive></behavior>'
      const r = await call(s, 'POST', '/behaviors.xml', {
        key: s.adminKey,
        raw: xml,
        contentType: 'application/xml',
      })
      expect(r.status).toBe(201)
      expect(r.text).toContain('<behavior>limit_file_regex</behavior>')
      expect(r.text).toContain('<value>{&quot;regex&quot;:&quot;^[a-z]+\\\\.txt$&quot;}</value>')
      expect(r.text).toContain('<recursive type="boolean">true</recursive>')
      const list = await call(s, 'GET', '/behaviors/folders/xml/in', {
        key: s.adminKey,
        accept: 'application/xml',
      })
      expect(list.text).toContain('<behaviors type="array">')
      expect(list.text).toContain('<path>xml/in</path>')
    })
  })

  describe('inheritance', () => {
    it('applies recursive behaviors below, and a folder cancels inherited ones of its type from there down', async () => {
      // tree/ (recursive: csv only) → tree/a (no rule) → tree/a/b (cancels: txt only, recursive) → tree/a/b/c
      const top = await post(ext('tree', ['csv'], { recursive: true }))
      const mid = await post({
        path: 'tree/a',
        behavior: 'limit_filename_length',
        value: { max_length: 12 },
        recursive: true,
      })
      const low = await post(
        ext('tree/a/b', ['txt'], { recursive: true, disable_parent_folder_behavior: true }),
      )
      const flat = await post(ext('tree/a', ['csv', 'txt']))
      const applying = async (path: string) =>
        (
          await call(s, 'GET', `/behaviors/folders/${path}?ancestor_behaviors=true`, { key: s.adminKey })
        ).body.map((b: { id: number }) => b.id)
      expect(await applying('tree')).toEqual([top.body.id])
      expect((await applying('tree/a')).sort()).toEqual([top.body.id, mid.body.id, flat.body.id].sort())
      expect((await applying('tree/a/b')).sort()).toEqual([mid.body.id, low.body.id].sort())
      expect((await applying('tree/a/b/c')).sort()).toEqual([mid.body.id, low.body.id].sort())
      const own = await call(s, 'GET', '/behaviors/folders/tree/a', { key: s.adminKey })
      expect(own.body.map((b: { id: number }) => b.id).sort()).toEqual([mid.body.id, flat.body.id].sort())

      const t = target(s)
      expect((await uploaded(s, 'tree/a/x.csv', 'x')).path).toBe('tree/a/x.csv')
      expectError(
        await uploadRefusal(t, 'tree/a/b/c/x.csv', 'x'),
        422,
        'processing-failure/invalid-file-type',
      )
      expect((await uploaded(s, 'tree/a/b/c/x.txt', 'x')).path).toBe('tree/a/b/c/x.txt')
      expectError(
        await uploadRefusal(t, 'tree/a/b/c/much-too-long.txt', 'x'),
        422,
        'processing-failure/invalid-filename',
      )
      expectError(await uploadRefusal(t, 'tree/x.txt', 'x'), 422, 'processing-failure/invalid-file-type')
      expect(await findRow(s, 'tree/x.txt')).toBeUndefined()
    })
  })

  it('moves a folder’s behaviors, and those inside it, with the folder', async () => {
    const own = await post(ext('Moving/src', ['csv'], { recursive: true }))
    const inside = await post({
      path: 'moving/SRC/in',
      behavior: 'limit_filename_length',
      value: { max_length: 5 },
    })
    const beside = await post(ext('moving/src-not', ['txt']))
    await makeFile(s, 'moving/src/in/a.csv')
    const moved = await req(target(s), 'POST', '/file_actions/move/moving/src', { destination: 'moving/dst' })
    expect(moved.status).toBe(201)
    const pathOf = async (id: number) =>
      (await call(s, 'GET', `/behaviors/${id}`, { key: s.adminKey })).body.path
    expect(await pathOf(own.body.id)).toBe('moving/dst')
    expect(await pathOf(inside.body.id)).toBe('moving/dst/in')
    expect(await pathOf(beside.body.id)).toBe('moving/src-not')
    expectError(
      await uploadRefusal(target(s), 'moving/dst/in/b.pdf', 'x'),
      422,
      'processing-failure/invalid-file-type',
    )
    expectError(
      await uploadRefusal(target(s), 'moving/dst/in/long.csv', 'x'),
      422,
      'processing-failure/invalid-filename',
    )
    expect((await uploaded(s, 'moving/src/b.pdf', 'x')).path).toBe('moving/src/b.pdf')
  })

  describe('upload rules on every change into a folder', () => {
    beforeAll(async () => {
      await post(ext('rules/ext', ['CSV']))
      await post({
        path: 'rules/deny',
        behavior: 'limit_file_extensions',
        value: { extensions: ['exe'], mode: 'deny' },
      })
      await post({
        path: 'rules/re',
        behavior: 'limit_file_regex',
        value: { regex: '^[A-Z]{3}-\\d+\\.txt$' },
      })
      await post({ path: 'rules/len', behavior: 'limit_filename_length', value: { max_length: 8 } })
      for (const f of ['rules/ext', 'rules/deny', 'rules/re', 'rules/len', 'rules/free'])
        await makeFolder(s, f)
    })

    it('refuses uploads that break a rule, case-insensitively for extensions', async () => {
      const t = target(s)
      expect((await uploaded(s, 'rules/ext/data.Csv', 'x')).path).toBe('rules/ext/data.Csv')
      const refused = await uploadRefusal(t, 'rules/ext/data.pdf', 'x')
      expectError(refused, 422, 'processing-failure/invalid-file-type')
      expect(refused.body.title).toBe('Invalid File Type')
      expectError(await uploadRefusal(t, 'rules/ext/noext', 'x'), 422, 'processing-failure/invalid-file-type')
      expectError(
        await uploadRefusal(t, 'rules/deny/setup.EXE', 'x'),
        422,
        'processing-failure/invalid-file-type',
      )
      expect((await uploaded(s, 'rules/deny/setup.msi', 'x')).path).toBe('rules/deny/setup.msi')
      const badName = await uploadRefusal(t, 'rules/re/abc-1.txt', 'x')
      expectError(badName, 422, 'processing-failure/invalid-filename')
      expect(badName.body.title).toBe('Invalid Filename')
      expect((await uploaded(s, 'rules/re/ABC-12.txt', 'x')).path).toBe('rules/re/ABC-12.txt')
      expectError(
        await uploadRefusal(t, 'rules/len/123456789', 'x'),
        422,
        'processing-failure/invalid-filename',
      )
      expect((await uploaded(s, 'rules/len/12345678', 'x')).path).toBe('rules/len/12345678')
      // Not recursive: a subfolder is free.
      expect((await uploaded(s, 'rules/ext/sub/data.pdf', 'x')).path).toBe('rules/ext/sub/data.pdf')
    })

    it('refuses renames, moves and copies of files and folders into a limited folder', async () => {
      const t = target(s)
      await makeFile(s, 'rules/free/report.pdf')
      await makeFile(s, 'rules/free/tree/deep/report.pdf')
      await makeFile(s, 'rules/ext/ok.csv')
      const op = (verb: string, from: string, destination: string) =>
        req(t, 'POST', `/file_actions/${verb}/${from}`, { destination })
      for (const verb of ['move', 'copy']) {
        expectError(
          await op(verb, 'rules/free/report.pdf', 'rules/ext/report.pdf'),
          422,
          'processing-failure/invalid-file-type',
        )
        expectError(
          await op(verb, 'rules/free/report.pdf', 'rules/len/long-name.pdf'),
          422,
          'processing-failure/invalid-filename',
        )
        // A folder whose files would land in a limited folder below the destination.
        await post(ext(`rules/landing-${verb}/tree/deep`, ['csv']))
        expectError(
          await op(verb, 'rules/free/tree', `rules/landing-${verb}/tree`),
          422,
          'processing-failure/invalid-file-type',
        )
        expect(await findRow(s, `rules/landing-${verb}/tree`)).toBeUndefined()
      }
      // A rename in place is a move.
      expectError(
        await op('move', 'rules/ext/ok.csv', 'rules/ext/ok.pdf'),
        422,
        'processing-failure/invalid-file-type',
      )
      expect(await findRow(s, 'rules/ext/ok.csv')).toBeDefined()
      expect(await findRow(s, 'rules/free/report.pdf')).toBeDefined()
      expect((await op('copy', 'rules/free/report.pdf', 'rules/deny/report.pdf')).status).toBe(201)
    })
  })
})
