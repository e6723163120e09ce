import { beforeAll, describe, expect, it } from 'vitest'
import { findRow, lastAction, makeFile, makeFolder } from './helpers/file-rows.js'
import { enc, encAll } from './helpers/files.js'
import {
  type CallResult,
  call,
  dialects,
  expectError,
  grant,
  makeKey,
  makeUser,
  useServer,
} from './helpers/server.js'

const names = (r: CallResult) => (r.body as { path: string }[]).map((f) => f.path)

describe.each(dialects)('folders (%s)', (dialect) => {
  const get = (p: string, key = s.adminKey) => call(s, 'GET', p, { key })

  /** Every page of a listing, following X-Files-Cursor. */
  async function allPages(p: string, key = s.adminKey): Promise<{ pages: string[][]; statuses: number[] }> {
    const pages: string[][] = []
    const statuses: number[] = []
    let url = p
    for (;;) {
      const r = await get(url, key)
      statuses.push(r.status)
      pages.push(names(r))
      const cursor = r.headers.get('x-files-cursor')
      if (!cursor || pages.length > 20) return { pages, statuses }
      url = `${p}${p.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(cursor)}`
    }
  }

  const s = useServer(dialect)
  beforeAll(async () => {
    await makeFolder(s, 'docs/empty')
    await makeFile(s, 'docs/b.txt', 'bb')
    await makeFile(s, 'docs/A report.pdf', 'aaaaaa')
    await makeFile(s, 'docs/c.md', 'c')
    await makeFile(s, 'docs/sub/deep/Needle.txt', 'n')
    await makeFile(s, 'docs/sub/haystack.txt', 'h')
    await makeFile(s, 'other/needle-too.txt', 'x')
    await makeFile(s, 'other/100%_sure.txt', 'x')
    await makeFile(s, 'other/100 sure.txt', 'x')
  })

  describe('GET /folders/{path}', () => {
    it('lists the direct children of a folder by path, folders and files alike', async () => {
      const r = await get('/folders/docs')
      expect(r.status).toBe(200)
      expect(names(r)).toEqual(['docs/A report.pdf', 'docs/b.txt', 'docs/c.md', 'docs/empty', 'docs/sub'])
      const folder = r.body.find((f: any) => f.path === 'docs/empty')
      expect(folder).toMatchObject({ type: 'directory', size: 0, display_name: 'empty', md5: null })
      const file = r.body.find((f: any) => f.path === 'docs/b.txt')
      expect(file).toMatchObject({ type: 'file', size: 2, display_name: 'b.txt', permissions: 'rwdl' })
      expect(typeof file.id).toBe('number')
      expect(file.download_uri).toBeUndefined()
    })

    it('lists the root folder at /folders and /folders/', async () => {
      for (const p of ['/folders', '/folders/', '/folders/%2F']) {
        const r = await get(p)
        expect(r.status, p).toBe(200)
        expect(names(r)).toEqual(['docs', 'other'])
      }
    })

    it('takes the path raw, fully encoded, with stray slashes and in any letter case', async () => {
      for (const p of ['docs/sub', encAll('docs/sub'), '/docs/sub/', encAll('/docs/sub/'), 'DOCS/Sub']) {
        const r = await get(`/folders/${p}`)
        expect(r.status, p).toBe(200)
        expect(names(r)).toEqual(['docs/sub/deep', 'docs/sub/haystack.txt'])
      }
      expectError(await get('/folders/docs%2F%2Fsub'), 400, 'bad-request/invalid-path')
    })

    it('finds names with spaces, unicode and a .json ending', async () => {
      await makeFile(s, 'unicode/Grüße und 東京/x.json', 'x')
      const r = await get(`/folders/${encAll('unicode/Grüße und 東京')}`)
      expect(r.status).toBe(200)
      expect(names(r)).toEqual(['unicode/Grüße und 東京/x.json'])
    })

    it('accepts the parameters the SDKs send and ignores those about previews', async () => {
      const r = await get(
        '/folders/docs?path=docs&preview_size=large&with_previews=true&with_priority_color=true&search_custom_metadata_key=k&page=1',
      )
      expect(r.status).toBe(200)
      expect(names(r)).toHaveLength(5)
      expectError(await get('/folders/docs?bogus=1'), 400, 'bad-request/request-params-invalid')
    })

    it('answers in XML with <files> of <file>', async () => {
      const r = await call(s, 'GET', '/folders/docs/sub', { key: s.adminKey, accept: 'application/xml' })
      expect(r.status).toBe(200)
      expect(r.text).toContain('<files type="array">')
      expect(r.text).toContain('<path>docs/sub/haystack.txt</path>')
      expect(r.text).toMatch(/<file>\s*<id type="integer">/)
    })

    it('pages with per_page and X-Files-Cursor, in path order by default', async () => {
      const { pages, statuses } = await allPages('/folders/docs?per_page=2')
      expect(statuses.every((x) => x === 200)).toBe(true)
      expect(pages).toEqual([['docs/A report.pdf', 'docs/b.txt'], ['docs/c.md', 'docs/empty'], ['docs/sub']])
    })

    it('sorts by size descending across pages', async () => {
      const { pages } = await allPages('/folders/docs?per_page=2&sort_by[size]=desc')
      // Folders have size 0; equal sizes fall back to id order.
      expect(pages.flat().slice(0, 3)).toEqual(['docs/A report.pdf', 'docs/b.txt', 'docs/c.md'])
      expect(pages.flat().slice(3).sort()).toEqual(['docs/empty', 'docs/sub'])
      expect(pages.map((p) => p.length)).toEqual([2, 2, 1])
    })

    it('sorts by modification time', async () => {
      await makeFile(s, 'times/new.txt', 'n', { mtime: Date.parse('2024-05-01T00:00:00Z') })
      await makeFile(s, 'times/old.txt', 'o', { mtime: Date.parse('2020-01-01T00:00:00Z') })
      const r = await get('/folders/times?sort_by[modified_at_datetime]=asc')
      expect(names(r)).toEqual(['times/old.txt', 'times/new.txt'])
      const p = await get('/folders/times?sort_by[provided_modified_at]=desc')
      expect(p.status).toBe(200)
    })

    it('refuses unknown sort fields, filters and a cursor from another sort', async () => {
      expectError(await get('/folders/docs?sort_by[name]=asc'), 400, 'bad-request/invalid-filter-field')
      expectError(await get('/folders/docs?filter[path]=x'), 400, 'bad-request/invalid-filter-field')
      const first = await get('/folders/docs?per_page=1')
      const cursor = first.headers.get('x-files-cursor')!
      expectError(
        await get(`/folders/docs?per_page=1&sort_by[size]=desc&cursor=${encodeURIComponent(cursor)}`),
        400,
        'bad-request/invalid-cursor-type-for-sort',
      )
      expectError(await get('/folders/docs?per_page=0'), 400, 'bad-request/request-params-invalid')
    })

    it('filters by type, and by modification time together with type', async () => {
      expect(names(await get('/folders/docs?type=folder'))).toEqual(['docs/empty', 'docs/sub'])
      expect(names(await get('/folders/docs?type=file'))).toHaveLength(3)
      expect(names(await get('/folders/times?type=file&modified_at_datetime=2023-01-01'))).toEqual([
        'times/new.txt',
      ])
      expectError(
        await get('/folders/times?modified_at_datetime=2023-01-01'),
        400,
        'bad-request/request-params-invalid',
      )
      expectError(
        await get('/folders/times?type=file&modified_at_datetime=yesterday'),
        400,
        'bad-request/datetime-parse',
      )
      expectError(await get('/folders/docs?type=directory'), 400, 'bad-request/request-params-invalid')
    })

    it('searches names case-insensitively at any depth inside the folder', async () => {
      expect(names(await get('/folders/docs?search=NEEDLE'))).toEqual(['docs/sub/deep/Needle.txt'])
      expect(names(await get('/folders/docs/sub?search=a'))).toEqual(['docs/sub/haystack.txt'])
      expect(names(await get('/folders/docs?search=needle&type=folder'))).toEqual([])
      // Only inside the folder: other/needle-too.txt is not found from docs.
      expect(names(await get('/folders?search=needle'))).toEqual([
        'docs/sub/deep/Needle.txt',
        'other/needle-too.txt',
      ])
    })

    it('takes % and _ in the search text literally', async () => {
      expect(names(await get(`/folders/other?search=${encodeURIComponent('100%_')}`))).toEqual([
        'other/100%_sure.txt',
      ])
      expect(names(await get('/folders/other?search=0_s'))).toEqual([])
    })

    it('searches the whole site with search_all, only from the root', async () => {
      const r = await get('/folders?search=needle&search_all=true')
      expect(names(r)).toEqual(['docs/sub/deep/Needle.txt', 'other/needle-too.txt'])
      expectError(
        await get('/folders/docs?search=needle&search_all=true'),
        400,
        'bad-request/search-all-on-child-path',
      )
    })

    it('is 404 folder-not-found for a missing folder and 400 for a file', async () => {
      expectError(await get('/folders/nope'), 404, 'not-found/folder-not-found')
      expectError(await get('/folders/docs/nope/deeper'), 404, 'not-found/folder-not-found')
      expectError(await get('/folders/docs/b.txt'), 400, 'bad-request/folder-must-not-be-a-file')
    })

    it('refuses bad paths', async () => {
      expectError(await get(`/folders/${encAll('docs/../other')}`), 400, 'bad-request/invalid-path')
      expectError(await get(`/folders/${'a'.repeat(5001)}`), 422, 'processing-failure/path-too-long')
    })
  })

  describe('who may list what', () => {
    let readonlyKey: string
    let writeonlyKey: string
    let deepKey: string
    let strangerKey: string
    /** A site admin's key, restricted to a folder. */
    const restrictedKey = async (path: string) =>
      (await makeKey(s, (await makeUser(s, { site_admin: true })).id, { path })).key

    beforeAll(async () => {
      await makeFile(s, 'team/shared/plan.txt', 'p')
      await makeFile(s, 'team/secret/keys.txt', 'k')
      await makeFolder(s, 'team/inbox')
      await makeFile(s, 'team/a/b/c/deep-needle.txt', 'd')
      await makeFile(s, 'team/a/b/sibling-needle.txt', 's')
      await makeFile(s, 'team/a/b/c/inner/x.txt', 'x')
      const reader = await makeUser(s)
      await grant(s, reader.id, 'team/shared', 'readonly')
      readonlyKey = (await makeKey(s, reader.id)).key
      const writer = await makeUser(s)
      await grant(s, writer.id, 'team/inbox', 'writeonly')
      writeonlyKey = (await makeKey(s, writer.id)).key
      const deep = await makeUser(s)
      await grant(s, deep.id, 'team/a/b/c', 'list')
      deepKey = (await makeKey(s, deep.id)).key
      strangerKey = (await makeKey(s, (await makeUser(s)).id)).key
    })

    it('lets a readonly user list inside the folder', async () => {
      const r = await get('/folders/team/shared', readonlyKey)
      expect(r.status).toBe(200)
      expect(names(r)).toEqual(['team/shared/plan.txt'])
      expect(r.body[0].permissions).toBe('rl')
    })

    it('refuses a user without permissions there', async () => {
      expectError(
        await get('/folders/team/secret', readonlyKey),
        403,
        'not-authorized/read-permission-required',
      )
      expectError(await get('/folders/team', strangerKey), 403, 'not-authorized/read-permission-required')
      expectError(
        await get('/folders/team/inbox', writeonlyKey),
        403,
        'not-authorized/read-permission-required',
      )
    })

    it('shows the folders on the way to a permission deep down, and nothing beside them', async () => {
      expect(names(await get('/folders', deepKey))).toEqual(['team'])
      expect(names(await get('/folders/team', deepKey))).toEqual(['team/a'])
      expect(names(await get('/folders/team/a', deepKey))).toEqual(['team/a/b'])
      expect(names(await get('/folders/team/a/b', deepKey))).toEqual(['team/a/b/c'])
      expect(names(await get('/folders/team/a/b/c', deepKey))).toEqual([
        'team/a/b/c/deep-needle.txt',
        'team/a/b/c/inner',
      ])
      // The writeonly folder shows on the way, so its holder can find where to upload.
      expect(names(await get('/folders/team', writeonlyKey))).toEqual(['team/inbox'])
    })

    it('pages the partial view correctly', async () => {
      const u = await makeUser(s)
      for (const f of ['team/shared', 'team/secret', 'team/inbox']) await grant(s, u.id, f, 'list')
      const key = (await makeKey(s, u.id)).key
      const { pages } = await allPages('/folders/team?per_page=2', key)
      expect(pages).toEqual([['team/inbox', 'team/secret'], ['team/shared']])
    })

    it('searches only where the caller may list', async () => {
      expect(names(await get('/folders?search=needle&search_all=true', deepKey))).toEqual([
        'team/a/b/c/deep-needle.txt',
      ])
      expect(names(await get('/folders/team?search=needle', deepKey))).toEqual(['team/a/b/c/deep-needle.txt'])
      expect(names(await get('/folders/team?search=needle', writeonlyKey))).toEqual([])
      expect(names(await get('/folders/team?search=needle'))).toEqual([
        'team/a/b/c/deep-needle.txt',
        'team/a/b/sibling-needle.txt',
      ])
    })

    it('keeps a path-restricted key inside its folder', async () => {
      const key = await restrictedKey('team/a/b')
      expect(names(await get('/folders', key))).toEqual(['team'])
      expect(names(await get('/folders/team/a/b', key))).toEqual([
        'team/a/b/c',
        'team/a/b/sibling-needle.txt',
      ])
      expectError(await get('/folders/team/shared', key), 403, 'not-authorized/api-key-is-path-restricted')
      expect(names(await get('/folders?search=needle&search_all=true', key))).toEqual([
        'team/a/b/c/deep-needle.txt',
        'team/a/b/sibling-needle.txt',
      ])
    })

    it('lets a desktop-app key list', async () => {
      const admin = await makeUser(s, { site_admin: true })
      const { key } = await makeKey(s, admin.id, { permission_set: 'desktop_app' })
      expect((await get('/folders/team/shared', key)).status).toBe(200)
    })
  })

  describe('POST /folders/{path}', () => {
    const mkdir = (p: string, body?: unknown, key = s.adminKey) =>
      call(s, 'POST', `/folders/${p}`, { key, ...(body !== undefined ? { body } : {}) })

    it('creates a folder and records a create Action', async () => {
      await makeFolder(s, 'made')
      const r = await mkdir(encAll('made/New Folder'), { path: 'made/New Folder' })
      expect(r.status).toBe(201)
      expect(r.body).toMatchObject({
        path: 'made/New Folder',
        display_name: 'New Folder',
        type: 'directory',
        size: 0,
        provided_mtime: null,
        permissions: 'rwdl',
        created_by_id: null,
      })
      expect((await findRow(s, 'made/new folder'))?.id).toBe(r.body.id)
      const a = await lastAction(s, 'create')
      expect(a).toMatchObject({
        path: 'made/New Folder',
        interface: 'restapi',
        display: 'Created folder New Folder',
      })
      expect(JSON.parse(a.targets)).toEqual([{ type: 'folder', id: r.body.id, name: 'New Folder' }])
    })

    it('needs mkdir_parents for missing parents, and then creates them all', async () => {
      expectError(await mkdir('made/x/y/z'), 422, 'processing-failure/destination-parent-does-not-exist')
      const r = await mkdir('made/x/y/z?mkdir_parents=true')
      expect(r.status).toBe(201)
      for (const p of ['made/x', 'made/x/y', 'made/x/y/z'])
        expect((await findRow(s, p))?.type).toBe('directory')
      const created = await s.container.db
        .selectFrom('actions')
        .select('path')
        .where('action', '=', 'create')
        .where('path', 'like', 'made/x%')
        .execute()
      expect(created.map((a) => a.path).sort()).toEqual(['made/x', 'made/x/y', 'made/x/y/z'])
      expect((await mkdir('made/p/q', { mkdir_parents: true })).status).toBe(201)
    })

    it('refuses an existing folder or file, in any letter case', async () => {
      await makeFile(s, 'made/file.txt')
      expectError(await mkdir('MADE/NEW FOLDER'), 422, 'processing-failure/destination-exists')
      expectError(await mkdir('made/file.txt'), 422, 'processing-failure/destination-exists')
      expectError(await mkdir('made/file.txt/inner'), 422, 'processing-failure/destination-parent-conflict')
    })

    it('refuses the root, bad paths and names ending in whitespace', async () => {
      expectError(await mkdir(''), 400, 'bad-request/invalid-path')
      expectError(await mkdir('%2F'), 400, 'bad-request/invalid-path')
      expectError(await mkdir(encAll('made/../x')), 400, 'bad-request/invalid-path')
      expectError(await mkdir(`made/${'a'.repeat(5001)}`), 422, 'processing-failure/path-too-long')
      expectError(
        await mkdir(enc('made/trailing ')),
        400,
        'bad-request/request-param-path-cannot-have-trailing-whitespace',
      )
      expectError(
        await mkdir(encAll('made/tab\t/x'), { mkdir_parents: true }),
        400,
        'bad-request/request-param-path-cannot-have-trailing-whitespace',
      )
      expectError(
        await mkdir(encAll('made/ta\tb')),
        400,
        'bad-request/invalid-path', // a control character inside a name
      )
      expectError(
        await mkdir(encAll('made/nbsp\u00a0')),
        400,
        'bad-request/request-param-path-cannot-have-trailing-whitespace',
      )
      expectError(
        await mkdir(encAll('made/mid /x'), { mkdir_parents: true }),
        400,
        'bad-request/request-param-path-cannot-have-trailing-whitespace',
      )
      // Leading whitespace and inner spaces are kept.
      expect((await mkdir(enc('made/ lead  inner'))).body.path).toBe('made/ lead  inner')
    })

    it('keeps unicode names', async () => {
      const r = await mkdir(encAll('made/Ünïcødé 📁'))
      expect(r.status).toBe(201)
      expect(r.body.display_name).toBe('Ünïcødé 📁')
    })

    it('records provided_mtime and refuses a bad one', async () => {
      const r = await mkdir('made/dated', { provided_mtime: '2024-02-03T04:05:06Z' })
      expect(r.body.provided_mtime).toBe('2024-02-03T04:05:06Z')
      expect((await findRow(s, 'made/dated'))?.provided_mtime).toBe(Date.parse('2024-02-03T04:05:06Z'))
      expectError(await mkdir('made/undated', { provided_mtime: 'soon' }), 400, 'bad-request/datetime-parse')
    })

    it('refuses unknown parameters and answers in XML', async () => {
      expectError(await mkdir('made/u', { colour: 'red' }), 400, 'bad-request/request-params-invalid')
      const r = await call(s, 'POST', '/folders/made/xml', { key: s.adminKey, accept: 'application/xml' })
      expect(r.status).toBe(201)
      expect(r.text).toMatch(/^<\?xml[^>]*>\n<file>/)
    })

    it('needs write permission there', async () => {
      const u = await makeUser(s)
      await grant(s, u.id, 'perm/ro', 'readonly')
      await grant(s, u.id, 'perm/wo', 'writeonly')
      await makeFolder(s, 'perm/ro')
      await makeFolder(s, 'perm/wo')
      const key = (await makeKey(s, u.id)).key
      expectError(await mkdir('perm/ro/x', undefined, key), 403, 'not-authorized/write-permission-required')
      expectError(await mkdir('perm/x', undefined, key), 403, 'not-authorized/write-permission-required')
      const r = await mkdir('perm/wo/x', undefined, key)
      expect(r.status).toBe(201)
      expect(r.body.permissions).toBe('w')
      expect(r.body.created_by_id).toBe(u.id)
      const restricted = (await makeKey(s, u.id, { path: 'perm/wo' })).key
      expectError(
        await mkdir('perm/ro/y', undefined, restricted),
        403,
        'not-authorized/api-key-is-path-restricted',
      )
      expect((await mkdir('perm/wo/y', undefined, restricted)).status).toBe(201)
    })
  })
})
