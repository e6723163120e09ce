import { beforeAll, describe, expect, it } from 'vitest'
import {
  blobText,
  findRow,
  garbageKeys,
  lastAction,
  makeFile,
  makeFolder,
  pathsUnder,
} from './helpers/file-rows.js'
import { enc, encAll } from './helpers/files.js'
import {
  call,
  dialects,
  expectError,
  grant,
  makeKey,
  makeUser,
  type TestUser,
  useServer,
} from './helpers/server.js'

describe.each(dialects)('file operations (%s)', (dialect) => {
  /** Full permission on `own`, readonly on `ro`, writeonly on `wo`. */
  let user: TestUser
  let userKey: string
  /** A site admin's key restricted to `own`. */
  let restrictedKey: string

  const del = (p: string, body?: unknown, key = s.adminKey) =>
    call(s, 'DELETE', `/files/${p}`, { key, ...(body !== undefined ? { body } : {}) })
  const copy = (p: string, body: unknown, key = s.adminKey) =>
    call(s, 'POST', `/file_actions/copy/${p}`, { key, body })
  const move = (p: string, body: unknown, key = s.adminKey) =>
    call(s, 'POST', `/file_actions/move/${p}`, { key, body })
  const exists = async (p: string) => (await findRow(s, p)) !== undefined

  const s = useServer(dialect)
  beforeAll(async () => {
    user = await makeUser(s)
    await grant(s, user.id, 'own', 'full')
    await grant(s, user.id, 'ro', 'readonly')
    await grant(s, user.id, 'wo', 'writeonly')
    for (const f of ['own', 'ro', 'wo']) await makeFolder(s, f)
    userKey = (await makeKey(s, user.id)).key
    const admin = await makeUser(s, { site_admin: true })
    restrictedKey = (await makeKey(s, admin.id, { path: 'own' })).key
  })

  describe('DELETE /files/{path}', () => {
    it('deletes a file, queues its blob and records one destroy Action', async () => {
      const f = await makeFile(s, 'del/one.txt')
      const r = await del(encAll('DEL/ONE.TXT'))
      expect(r.status).toBe(204)
      expect(r.text).toBe('')
      expect(await exists('del/one.txt')).toBe(false)
      expect(await garbageKeys(s)).toContain(f.blob_key)
      const a = await lastAction(s, 'destroy')
      expect(a).toMatchObject({ path: 'del/one.txt', display: 'Deleted one.txt', interface: 'restapi' })
      expect(JSON.parse(a.targets)).toEqual([{ type: 'file', id: f.id, name: 'one.txt' }])
    })

    it('deletes an empty folder, but a full one only with recursive', async () => {
      await makeFolder(s, 'del/empty')
      expect((await del('del/empty')).status).toBe(204)
      await makeFile(s, 'del/full/x.txt')
      expectError(await del('del/full'), 422, 'processing-failure/folder-not-empty')
      expectError(await del('del/full', { recursive: false }), 422, 'processing-failure/folder-not-empty')
      expect(await exists('del/full/x.txt')).toBe(true)
    })

    it('deletes a folder recursively: every row goes, every blob is queued, one Action', async () => {
      const files = [
        await makeFile(s, 'del/tree/a.txt'),
        await makeFile(s, 'del/tree/sub/b.txt'),
        await makeFile(s, 'del/tree/sub/deeper/c.txt'),
      ]
      await makeFolder(s, 'del/tree/sub/empty')
      await makeFile(s, 'del/tree-sibling.txt')
      const folder = (await findRow(s, 'del/tree'))!
      const before = (await s.container.db.selectFrom('actions').select('id').execute()).length
      const r = await del('del/tree?recursive=true')
      expect(r.status).toBe(204)
      expect(await pathsUnder(s, 'del/tree')).toEqual([])
      expect(await exists('del/tree-sibling.txt')).toBe(true)
      const queued = await garbageKeys(s)
      for (const f of files) expect(queued).toContain(f.blob_key)
      const after = await s.container.db.selectFrom('actions').selectAll().orderBy('id').execute()
      expect(after.length).toBe(before + 1)
      expect(after.at(-1)).toMatchObject({
        action: 'destroy',
        path: 'del/tree',
        display: 'Deleted folder tree',
      })
      expect(JSON.parse(after.at(-1)!.targets)).toEqual([{ type: 'folder', id: folder.id, name: 'tree' }])
    })

    it('takes recursive in the body and the SDK’s echoed path', async () => {
      await makeFile(s, 'del/body/x.txt')
      expect((await del(encAll('del/body'), { path: 'del/body', recursive: true })).status).toBe(204)
      expectError(await del('del/x', { recursive: 'maybe' }), 400, 'bad-request/request-params-invalid')
      expectError(await del('del/x', { force: true }), 400, 'bad-request/request-params-invalid')
    })

    it('is 404 for a missing path and 400 for the root or a bad path', async () => {
      expectError(await del('del/missing.txt'), 404, 'not-found/file-not-found')
      expectError(await del(''), 400, 'bad-request/invalid-path')
      expectError(await del('%2F'), 400, 'bad-request/invalid-path')
      expectError(await del(encAll('del/../x')), 400, 'bad-request/invalid-path')
      expectError(await del('a'.repeat(5001)), 422, 'processing-failure/path-too-long')
    })

    it('needs delete permission', async () => {
      await makeFile(s, 'ro/keep.txt')
      await makeFile(s, 'wo/keep.txt')
      await makeFile(s, 'own/gone.txt')
      expectError(
        await del('ro/keep.txt', undefined, userKey),
        403,
        'not-authorized/write-permission-required',
      )
      expectError(
        await del('wo/keep.txt', undefined, userKey),
        403,
        'not-authorized/write-permission-required',
      )
      expectError(
        await del('ro/missing.txt', undefined, userKey),
        403,
        'not-authorized/write-permission-required',
      )
      expectError(
        await del('ro/keep.txt', undefined, restrictedKey),
        403,
        'not-authorized/api-key-is-path-restricted',
      )
      expect((await del('own/gone.txt', undefined, userKey)).status).toBe(204)
      expect((await lastAction(s, 'destroy')).user_id).toBe(user.id)
    })
  })

  describe('DELETE /resource/{id}', () => {
    it('deletes by id, with recursive for a full folder', async () => {
      const f = await makeFile(s, 'res/a.txt')
      expect((await call(s, 'DELETE', `/resource/${f.id}`, { key: s.adminKey })).status).toBe(204)
      expect(await exists('res/a.txt')).toBe(false)
      expect(await garbageKeys(s)).toContain(f.blob_key)
      await makeFile(s, 'res/dir/b.txt')
      const dir = (await findRow(s, 'res/dir'))!
      expectError(
        await call(s, 'DELETE', `/resource/${dir.id}`, { key: s.adminKey }),
        422,
        'processing-failure/folder-not-empty',
      )
      const r = await call(s, 'DELETE', `/resource/${dir.id}`, {
        key: s.adminKey,
        body: { id: dir.id, recursive: true },
      })
      expect(r.status).toBe(204)
      expect(await pathsUnder(s, 'res/dir')).toEqual([])
      expect(await lastAction(s, 'destroy')).toMatchObject({ path: 'res/dir' })
    })

    it('is 404 for an unknown id, 400 for a mismatched one and 403 without permission', async () => {
      expectError(
        await call(s, 'DELETE', '/resource/999999', { key: s.adminKey }),
        404,
        'not-found/file-not-found',
      )
      expectError(
        await call(s, 'DELETE', '/resource/abc', { key: s.adminKey }),
        400,
        'bad-request/request-params-invalid',
      )
      const f = await makeFile(s, 'ro/by-id.txt')
      expectError(
        await call(s, 'DELETE', `/resource/${f.id}`, { key: s.adminKey, body: { id: f.id + 1 } }),
        400,
        'bad-request/request-params-invalid',
      )
      expectError(
        await call(s, 'DELETE', `/resource/${f.id}`, { key: userKey }),
        403,
        'not-authorized/write-permission-required',
      )
      expect(await exists('ro/by-id.txt')).toBe(true)
    })
  })

  describe('POST /file_actions/copy/{path}', () => {
    it('copies a file: new row, new blob with the same bytes, one copy Action', async () => {
      const src = await makeFile(s, 'cp/src.txt', 'hello copy', {
        provided_mtime: Date.parse('2022-01-01T00:00:00Z'),
      })
      const r = await copy(encAll('cp/src.txt'), { path: 'cp/src.txt', destination: '/cp/Copy of src.txt' })
      expect(r.status).toBe(201)
      expect(r.body).toEqual({ status: 'completed', file_migration_id: null })
      const dup = (await findRow(s, 'cp/copy of src.txt'))!
      expect(dup).toMatchObject({
        path: 'cp/Copy of src.txt',
        name: 'Copy of src.txt',
        size: 10,
        md5: src.md5,
      })
      expect(dup.id).not.toBe(src.id)
      expect(dup.blob_key).not.toBe(src.blob_key)
      expect(dup.provided_mtime).toBe(src.provided_mtime)
      expect(await blobText(s, dup.blob_key!)).toBe('hello copy')
      expect(await exists('cp/src.txt')).toBe(true)
      expect(await garbageKeys(s)).not.toContain(dup.blob_key)
      const a = await lastAction(s, 'copy')
      expect(a).toMatchObject({
        path: 'cp/Copy of src.txt',
        source: 'cp/src.txt',
        destination: 'cp/Copy of src.txt',
        display: 'Copied src.txt to /cp/Copy of src.txt',
      })
      expect(JSON.parse(a.targets)).toEqual([{ type: 'file', id: dup.id, name: 'Copy of src.txt' }])
    })

    it('copies a folder with its bytes, creating missing destination parents', async () => {
      await makeFile(s, 'cp/dir/a.txt', 'A')
      await makeFile(s, 'cp/dir/sub/b.txt', 'B')
      await makeFolder(s, 'cp/dir/sub/empty')
      const r = await copy('cp/dir', { destination: 'cp/new/parents/dir2' })
      expect(r.status).toBe(201)
      expect(await pathsUnder(s, 'cp/new')).toEqual([
        'cp/new',
        'cp/new/parents',
        'cp/new/parents/dir2',
        'cp/new/parents/dir2/a.txt',
        'cp/new/parents/dir2/sub',
        'cp/new/parents/dir2/sub/b.txt',
        'cp/new/parents/dir2/sub/empty',
      ])
      for (const [from, to] of [
        ['cp/dir/a.txt', 'cp/new/parents/dir2/a.txt'],
        ['cp/dir/sub/b.txt', 'cp/new/parents/dir2/sub/b.txt'],
      ] as const) {
        const a = (await findRow(s, from))!
        const b = (await findRow(s, to))!
        expect(b.blob_key).not.toBe(a.blob_key)
        expect(await blobText(s, b.blob_key!)).toBe(await blobText(s, a.blob_key!))
        expect(b.parent_lower).toBe(to.slice(0, to.lastIndexOf('/')))
      }
      expect(await lastAction(s, 'copy')).toMatchObject({
        path: 'cp/new/parents/dir2',
        source: 'cp/dir',
        destination: 'cp/new/parents/dir2',
        display: 'Copied folder dir to /cp/new/parents/dir2',
      })
      const created = await s.container.db
        .selectFrom('actions')
        .select('path')
        .where('action', '=', 'create')
        .where('path', 'like', 'cp/new%')
        .execute()
      expect(created.map((c) => c.path).sort()).toEqual(['cp/new', 'cp/new/parents'])
    })

    it('copies only the folder structure with structure=true', async () => {
      expect((await copy('cp/dir', { destination: 'cp/skeleton', structure: true })).status).toBe(201)
      expect(await pathsUnder(s, 'cp/skeleton')).toEqual([
        'cp/skeleton',
        'cp/skeleton/sub',
        'cp/skeleton/sub/empty',
      ])
      expectError(
        await copy('cp/src.txt', { destination: 'cp/x.txt', structure: true }),
        400,
        'bad-request/request-params-invalid',
      )
    })

    it('puts new rows under the destination folder as it is spelled', async () => {
      await makeFolder(s, 'cp/Spelled')
      expect((await copy('cp/src.txt', { destination: 'CP/SPELLED/Name.txt' })).status).toBe(201)
      expect((await findRow(s, 'cp/spelled/name.txt'))?.path).toBe('cp/Spelled/Name.txt')
    })

    it('refuses a missing or same destination, a copy into itself and a missing source', async () => {
      expectError(await copy('cp/src.txt', {}), 400, 'bad-request/request-params-required')
      expectError(await copy('cp/src.txt', { destination: '  ' }), 400, 'bad-request/request-params-required')
      expectError(
        await copy('cp/src.txt', { destination: 'CP/SRC.TXT' }),
        400,
        'bad-request/destination-same',
      )
      expectError(
        await copy('cp/dir', { destination: 'cp/dir/sub/inside' }),
        422,
        'processing-failure/destination-parent-conflict',
      )
      expectError(await copy('cp/nope.txt', { destination: 'cp/x.txt' }), 404, 'not-found/file-not-found')
      expectError(
        await copy('cp/src.txt', { destination: 'cp/src.txt/x' }),
        422,
        'processing-failure/destination-parent-conflict',
      )
      expectError(
        await copy('cp/dir/a.txt', { destination: 'cp/src.txt/x/a.txt' }),
        422,
        'processing-failure/destination-parent-conflict',
      )
      expectError(await copy('', { destination: 'x' }), 400, 'bad-request/invalid-path')
      expectError(await copy('cp/src.txt', { destination: '/' }), 400, 'bad-request/invalid-path')
      expectError(await copy('cp/src.txt', { destination: 'cp/../x' }), 400, 'bad-request/invalid-path')
      expectError(
        await copy('cp/src.txt', { destination: `cp/${'a'.repeat(5001)}` }),
        422,
        'processing-failure/path-too-long',
      )
      expectError(
        await copy('cp/src.txt', { destination: 'cp/name.txt ' }),
        400,
        'bad-request/request-param-path-cannot-have-trailing-whitespace',
      )
      expectError(
        await copy('cp/src.txt', { destination: 'cp/y', colour: 1 }),
        400,
        'bad-request/request-params-invalid',
      )
    })

    it('refuses an existing destination unless overwrite, and a file for a folder always', async () => {
      await makeFile(s, 'cp/target.txt', 'old bytes')
      expectError(
        await copy('cp/src.txt', { destination: 'cp/target.txt' }),
        422,
        'processing-failure/destination-exists',
      )
      expectError(
        await copy('cp/src.txt', { destination: 'cp/dir', overwrite: true }),
        422,
        'processing-failure/destination-exists',
      )
      expectError(
        await copy('cp/dir', { destination: 'cp/target.txt', overwrite: true }),
        422,
        'processing-failure/destination-exists',
      )
      await makeFolder(s, 'cp/dir/sub/inner')
      expectError(
        await copy('cp/dir/sub', { destination: 'cp/dir', overwrite: true }),
        422,
        'processing-failure/destination-parent-conflict',
      )
    })

    it('replaces a file with overwrite, keeping its id and queueing its old bytes', async () => {
      const old = (await findRow(s, 'cp/target.txt'))!
      expect((await copy('cp/src.txt', { destination: 'cp/target.txt', overwrite: true })).status).toBe(201)
      const now = (await findRow(s, 'cp/target.txt'))!
      expect(now.id).toBe(old.id)
      expect(now.blob_key).not.toBe(old.blob_key)
      expect(await blobText(s, now.blob_key!)).toBe('hello copy')
      expect(await garbageKeys(s)).toContain(old.blob_key)
      expect(await garbageKeys(s)).not.toContain(now.blob_key)
    })

    it('merges a folder into an existing one with overwrite', async () => {
      await makeFile(s, 'cp/merge-src/same.txt', 'new same')
      await makeFile(s, 'cp/merge-src/sub/added.txt', 'added')
      await makeFile(s, 'cp/merge-dst/same.txt', 'old same')
      await makeFile(s, 'cp/merge-dst/sub/kept.txt', 'kept')
      expect((await copy('cp/merge-src', { destination: 'cp/merge-dst', overwrite: true })).status).toBe(201)
      expect(await pathsUnder(s, 'cp/merge-dst')).toEqual([
        'cp/merge-dst',
        'cp/merge-dst/same.txt',
        'cp/merge-dst/sub',
        'cp/merge-dst/sub/added.txt',
        'cp/merge-dst/sub/kept.txt',
      ])
      expect(await blobText(s, (await findRow(s, 'cp/merge-dst/same.txt'))!.blob_key!)).toBe('new same')
      expect(await blobText(s, (await findRow(s, 'cp/merge-dst/sub/kept.txt'))!.blob_key!)).toBe('kept')
    })

    it('leaves its copied blobs queued when it fails after copying them', async () => {
      await makeFile(s, 'cp/clash-src/a.txt', 'a')
      await makeFile(s, 'cp/clash-src/z', 'file z')
      await makeFolder(s, 'cp/clash-dst/z')
      const before = (await garbageKeys(s)).length
      const rows = (await s.container.db.selectFrom('files').select('id').execute()).length
      expectError(
        await copy('cp/clash-src', { destination: 'cp/clash-dst', overwrite: true }),
        422,
        'processing-failure/destination-exists',
      )
      expect((await garbageKeys(s)).length).toBe(before + 2)
      expect((await s.container.db.selectFrom('files').select('id').execute()).length).toBe(rows)
    })

    it('keeps unicode and spaces in names', async () => {
      expect((await copy(encAll('cp/src.txt'), { destination: 'cp/Ünï cødé/📄 copy.txt' })).status).toBe(201)
      expect((await findRow(s, 'cp/ünï cødé/📄 copy.txt'))?.name).toBe('📄 copy.txt')
    })

    it('answers in XML as a file-action', async () => {
      const r = await call(s, 'POST', '/file_actions/copy/cp/src.txt', {
        key: s.adminKey,
        accept: 'application/xml',
        body: { destination: 'cp/xml.txt' },
      })
      expect(r.status).toBe(201)
      expect(r.text).toContain('<file-action>')
      expect(r.text).toContain('<status>completed</status>')
    })

    it('needs read on the source and write on the destination', async () => {
      await makeFile(s, 'ro/r.txt', 'r')
      await makeFile(s, 'wo/w.txt', 'w')
      await makeFile(s, 'own/o.txt', 'o')
      expect((await copy('ro/r.txt', { destination: 'own/r.txt' }, userKey)).status).toBe(201)
      expect((await findRow(s, 'own/r.txt'))?.created_by_id).toBe(user.id)
      expectError(
        await copy('wo/w.txt', { destination: 'own/w.txt' }, userKey),
        403,
        'not-authorized/read-permission-required',
      )
      expectError(
        await copy('own/o.txt', { destination: 'ro/o.txt' }, userKey),
        403,
        'not-authorized/write-permission-required',
      )
      expect((await copy('own/o.txt', { destination: 'wo/o.txt' }, userKey)).status).toBe(201)
      expectError(
        await copy('own/o.txt', { destination: 'ro/o.txt' }, restrictedKey),
        403,
        'not-authorized/api-key-is-path-restricted',
      )
      expect((await copy('own/o.txt', { destination: 'own/o2.txt' }, restrictedKey)).status).toBe(201)
    })
  })

  describe('POST /file_actions/move/{path}', () => {
    it('renames a file in place, keeping its id, with a move Action', async () => {
      const f = await makeFile(s, 'mv/a.txt', 'a')
      const r = await move(encAll('mv/a.txt'), { path: 'mv/a.txt', destination: 'mv/b.txt' })
      expect(r.status).toBe(201)
      expect(r.body).toEqual({ status: 'completed', file_migration_id: null })
      expect(await exists('mv/a.txt')).toBe(false)
      expect(await findRow(s, 'mv/b.txt')).toMatchObject({
        id: f.id,
        name: 'b.txt',
        blob_key: f.blob_key,
        parent_lower: 'mv',
      })
      const a = await lastAction(s, 'move')
      expect(a).toMatchObject({
        path: 'mv/b.txt',
        source: 'mv/a.txt',
        destination: 'mv/b.txt',
        display: 'Renamed a.txt to /mv/b.txt',
      })
      expect(JSON.parse(a.targets)).toEqual([{ type: 'file', id: f.id, name: 'b.txt' }])
    })

    it('moves a folder and rewrites every path inside it', async () => {
      const inner = await makeFile(s, 'mv/dir/sub/deep/x.txt', 'x')
      await makeFile(s, 'mv/dir/y.txt', 'y')
      await makeFile(s, 'mv/dir-sibling.txt', 's')
      const dir = (await findRow(s, 'mv/dir'))!
      const r = await move('mv/dir', { destination: 'mv/to/be/created/moved' })
      expect(r.status).toBe(201)
      expect(await pathsUnder(s, 'mv/dir')).toEqual([])
      expect(await exists('mv/dir-sibling.txt')).toBe(true)
      expect(await pathsUnder(s, 'mv/to/be/created/moved')).toEqual([
        'mv/to/be/created/moved',
        'mv/to/be/created/moved/sub',
        'mv/to/be/created/moved/sub/deep',
        'mv/to/be/created/moved/sub/deep/x.txt',
        'mv/to/be/created/moved/y.txt',
      ])
      const x = (await findRow(s, 'mv/to/be/created/moved/sub/deep/x.txt'))!
      expect(x).toMatchObject({
        id: inner.id,
        parent_lower: 'mv/to/be/created/moved/sub/deep',
        name: 'x.txt',
      })
      expect((await findRow(s, 'mv/to/be/created/moved'))?.id).toBe(dir.id)
      expect(await lastAction(s, 'move')).toMatchObject({
        path: 'mv/to/be/created/moved',
        source: 'mv/dir',
        destination: 'mv/to/be/created/moved',
        display: 'Moved folder dir to /mv/to/be/created/moved',
      })
    })

    it('rewrites paths with characters beyond the basic plane', async () => {
      await makeFile(s, 'mv/📁 ünï/🎉 party/ß.txt', 'p')
      expect((await move(encAll('mv/📁 ünï'), { destination: 'mv/🗂️ Ω' })).status).toBe(201)
      const row = (await findRow(s, 'mv/🗂️ ω/🎉 party/ß.txt'))!
      expect(row).toMatchObject({ path: 'mv/🗂️ Ω/🎉 party/ß.txt', parent_lower: 'mv/🗂️ ω/🎉 party' })
    })

    it('allows a case-only rename, of a folder too, and refuses a move onto itself', async () => {
      const f = await makeFile(s, 'mv/case/file.txt', 'c')
      expect((await move('mv/case/file.txt', { destination: 'mv/case/FILE.txt' })).status).toBe(201)
      expect(await findRow(s, 'mv/case/file.txt')).toMatchObject({
        id: f.id,
        path: 'mv/case/FILE.txt',
        name: 'FILE.txt',
      })
      expect((await move('mv/case', { destination: 'mv/CASE' })).status).toBe(201)
      expect((await findRow(s, 'mv/case/file.txt'))?.path).toBe('mv/CASE/FILE.txt')
      expectError(await move('mv/CASE', { destination: 'mv/CASE' }), 400, 'bad-request/destination-same')
      expectError(await move('mv/case', { destination: 'mv/CASE' }), 400, 'bad-request/destination-same')
    })

    it('refuses what copy refuses', async () => {
      await makeFile(s, 'mv/keep/k.txt', 'k')
      await makeFile(s, 'mv/other.txt', 'o')
      expectError(await move('mv/keep/k.txt', {}), 400, 'bad-request/request-params-required')
      expectError(
        await move('mv/keep', { destination: 'mv/keep/inner' }),
        422,
        'processing-failure/destination-parent-conflict',
      )
      expectError(await move('mv/nope', { destination: 'mv/nope2' }), 404, 'not-found/file-not-found')
      expectError(
        await move('mv/keep/k.txt', { destination: 'mv/other.txt' }),
        422,
        'processing-failure/destination-exists',
      )
      expectError(
        await move('mv/keep', { destination: 'mv/other.txt', overwrite: true }),
        422,
        'processing-failure/destination-exists',
      )
      expectError(
        await move('mv/keep/k.txt', { destination: 'mv/other.txt/k.txt' }),
        422,
        'processing-failure/destination-parent-conflict',
      )
      expectError(
        await move('mv/keep/k.txt', { destination: 'mv/keep ' }),
        400,
        'bad-request/request-param-path-cannot-have-trailing-whitespace',
      )
      expectError(
        await move('mv/keep/k.txt', { destination: 'mv', overwrite: true }),
        422,
        'processing-failure/destination-exists',
      )
      expectError(
        await move('mv/keep', { destination: 'mv', overwrite: true }),
        422,
        'processing-failure/destination-parent-conflict',
      )
      expect(await exists('mv/keep/k.txt')).toBe(true)
    })

    it('replaces a file with overwrite, queueing the replaced bytes', async () => {
      const a = await makeFile(s, 'mv/ow/a.txt', 'new')
      const b = await makeFile(s, 'mv/ow/b.txt', 'old')
      expect((await move('mv/ow/a.txt', { destination: 'mv/ow/b.txt', overwrite: true })).status).toBe(201)
      expect(await findRow(s, 'mv/ow/b.txt')).toMatchObject({ id: a.id, blob_key: a.blob_key })
      expect(await exists('mv/ow/a.txt')).toBe(false)
      expect(await garbageKeys(s)).toContain(b.blob_key)
      expect(await garbageKeys(s)).not.toContain(a.blob_key)
    })

    it('merges a folder into an existing one with overwrite', async () => {
      await makeFile(s, 'mv/m-src/same.txt', 'new same')
      await makeFile(s, 'mv/m-src/sub/added.txt', 'added')
      const replaced = await makeFile(s, 'mv/m-dst/same.txt', 'old same')
      await makeFile(s, 'mv/m-dst/sub/kept.txt', 'kept')
      const dst = (await findRow(s, 'mv/m-dst'))!
      expect((await move('mv/m-src', { destination: 'mv/m-dst', overwrite: true })).status).toBe(201)
      expect(await pathsUnder(s, 'mv/m-src')).toEqual([])
      expect(await pathsUnder(s, 'mv/m-dst')).toEqual([
        'mv/m-dst',
        'mv/m-dst/same.txt',
        'mv/m-dst/sub',
        'mv/m-dst/sub/added.txt',
        'mv/m-dst/sub/kept.txt',
      ])
      expect(await blobText(s, (await findRow(s, 'mv/m-dst/same.txt'))!.blob_key!)).toBe('new same')
      expect(await garbageKeys(s)).toContain(replaced.blob_key)
      expect((await findRow(s, 'mv/m-dst'))?.id).toBe(dst.id)
      expect(JSON.parse((await lastAction(s, 'move')).targets)).toEqual([
        { type: 'folder', id: dst.id, name: 'm-dst' },
      ])
    })

    it('needs delete on the source and write on the destination', async () => {
      await makeFile(s, 'ro/m.txt', 'r')
      await makeFile(s, 'wo/m.txt', 'w')
      await makeFile(s, 'own/m.txt', 'o')
      expectError(
        await move('ro/m.txt', { destination: 'own/m2.txt' }, userKey),
        403,
        'not-authorized/write-permission-required',
      )
      expectError(
        await move('wo/m.txt', { destination: 'own/m2.txt' }, userKey),
        403,
        'not-authorized/write-permission-required',
      )
      expectError(
        await move('own/m.txt', { destination: 'ro/m2.txt' }, userKey),
        403,
        'not-authorized/write-permission-required',
      )
      expectError(
        await move('own/m.txt', { destination: 'ro/m2.txt' }, restrictedKey),
        403,
        'not-authorized/api-key-is-path-restricted',
      )
      expect((await move('own/m.txt', { destination: 'wo/m2.txt' }, userKey)).status).toBe(201)
      expect(await lastAction(s, 'move')).toMatchObject({ user_id: user.id, path: 'wo/m2.txt' })
    })

    it('takes the path raw or encoded', async () => {
      await makeFile(s, 'mv/raw dir/r.txt', 'r')
      expect((await move(enc('mv/raw dir/r.txt'), { destination: 'mv/raw dir/r2.txt' })).status).toBe(201)
      expect((await move(encAll('mv/raw dir/r2.txt'), { destination: 'mv/raw dir/r3.txt' })).status).toBe(201)
      expect(await exists('mv/raw dir/r3.txt')).toBe(true)
    })
  })
})

describe.each(dialects)('a long copy and the janitor (%s)', (dialect) => {
  let t = Date.now()
  const s = useServer(dialect, {}, { now: () => t })

  it('keeps its copied blobs from the janitor until it commits', async () => {
    for (let i = 0; i < 10; i++) await makeFile(s, `slow/src/f${i}.txt`, `bytes ${i}`)
    // Each blob copy takes ten minutes and the janitor runs after each: the whole copy takes well
    // over the janitor's hour of grace.
    const blobs = s.container.blobs
    const original = blobs.copy.bind(blobs)
    blobs.copy = async (key: string) => {
      const copied = await original(key)
      t += 10 * 60_000
      await s.container.janitor.runOnce()
      return copied
    }
    try {
      const r = await call(s, 'POST', '/file_actions/copy/slow/src', {
        key: s.adminKey,
        body: { destination: 'slow/dst' },
      })
      expect(r.status).toBe(201)
    } finally {
      blobs.copy = original
    }
    for (let i = 0; i < 10; i++) {
      const row = (await findRow(s, `slow/dst/f${i}.txt`))!
      expect(await blobText(s, row.blob_key!)).toBe(`bytes ${i}`)
    }
    expect(await garbageKeys(s)).toEqual([])
  })
})
