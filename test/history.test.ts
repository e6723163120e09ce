import { beforeAll, describe, expect, it } from 'vitest'
import { type NewAction, recordAction } from '../src/modules/actions/action-recorder.js'
import {
  call,
  dialects,
  expectError,
  login,
  makeKey,
  makeUser,
  type TestUser,
  useServer,
} from './helpers/server.js'

const HOUR = 3_600_000
const MINUTE = 60_000

interface Made {
  id: number
  at: number
  action: string
  path: string
  source: string | null
  userId: number | null
}

/**
 * One server per dialect with a movable clock. Users and keys are made at t0; the clock then moves
 * 26 hours on, so the actions of that setup are out of the window, and the test actions are
 * recorded over the two hours before it, plus one 25 hours old.
 */
describe.each(dialects)('GET /history… (%s)', (dialect) => {
  let clock = Date.now()
  let t1 = 0
  const made: Made[] = []
  const clockKeys: string[] = []
  let old: Made
  const u = {} as Record<'alice' | 'bob' | 'carol' | 'root', TestUser>
  const k = {} as Record<'alice' | 'bob' | 'carol' | 'root' | 'restricted' | 'none' | 'desktop', string>

  async function record(at: number, who: keyof typeof u | null, a: NewAction): Promise<Made> {
    const user = who ? u[who] : null
    const ctx = {
      siteId: s.container.site.id,
      userId: user?.id ?? null,
      username: user?.username ?? null,
      ip: '192.0.2.7',
      interface: 'restapi',
    }
    const id = await recordAction(s.container.db, ctx, a, at)
    const m = { id, at, action: a.action, path: a.path ?? '', source: a.source ?? null, userId: ctx.userId }
    made.push(m)
    return m
  }
  const file = (name: string, id = 7) => [{ type: 'file', id, name }]

  const s = useServer(dialect, {}, { now: () => clock })
  beforeAll(async () => {
    for (const name of ['alice', 'bob', 'carol'] as const) u[name] = await makeUser(s)
    u.root = await makeUser(s, { site_admin: true })
    const grant = (user: number, path: string, permission: string) =>
      s.container.db
        .insertInto('permissions')
        .values({ site_id: s.container.site.id, user_id: user, path, permission, created_at: clock })
        .execute()
    await grant(u.alice.id, 'docs', 'readonly')
    await grant(u.bob.id, 'docs', 'history')
    for (const name of ['alice', 'bob', 'carol', 'root'] as const)
      k[name] = (await makeKey(s, u[name].id)).key
    k.restricted = (await makeKey(s, u.root.id, { path: 'docs/sub' })).key
    k.none = (await makeKey(s, u.alice.id, { permission_set: 'none' })).key
    k.desktop = (await makeKey(s, u.alice.id, { permission_set: 'desktop_app' })).key
    for (let i = 0; i < 5; i++) clockKeys.push((await makeKey(s, null)).key)

    clock += 26 * HOUR
    t1 = clock
    const at = (i: number) => t1 - 2 * HOUR + i * MINUTE
    old = await record(t1 - 25 * HOUR, 'alice', {
      action: 'create',
      display: 'Uploaded a.txt',
      path: 'docs/a.txt',
    })
    made.length = 0
    const folder = [{ type: 'folder', id: 3, name: 'docs' }]
    await record(at(0), 'alice', {
      action: 'create',
      display: 'Created folder docs',
      path: 'docs',
      targets: folder,
    })
    await record(at(1), 'alice', {
      action: 'create',
      display: 'Uploaded a.txt',
      path: 'docs/a.txt',
      targets: file('a.txt'),
    })
    await record(at(2), 'bob', {
      action: 'read',
      display: 'Downloaded a.txt',
      path: 'docs/a.txt',
      targets: file('a.txt'),
    })
    await record(at(3), 'alice', {
      action: 'update',
      display: 'Replaced a.txt',
      path: 'docs/a.txt',
      targets: file('a.txt'),
    })
    const moved = { source: 'docs/a.txt', destination: 'docs/sub/b.txt', path: 'docs/sub/b.txt' }
    await record(at(4), 'alice', {
      action: 'move',
      display: 'Moved a.txt to /docs/sub/b.txt',
      ...moved,
      targets: file('b.txt'),
    })
    const copied = { source: 'docs/sub/b.txt', destination: 'other/c.txt', path: 'other/c.txt' }
    await record(at(5), 'root', {
      action: 'copy',
      display: 'Copied b.txt to /other/c.txt',
      ...copied,
      targets: file('c.txt', 8),
    })
    await record(at(6), 'root', {
      action: 'destroy',
      display: 'Deleted c.txt',
      path: 'other/c.txt',
      targets: file('c.txt', 8),
    })
    await record(at(7), 'alice', {
      action: 'create',
      display: 'Uploaded z.txt',
      path: 'docsx/z.txt',
      targets: file('z.txt', 9),
    })
    await record(at(8), 'bob', {
      action: 'create',
      display: 'Uploaded Upper.txt',
      path: 'Docs/Upper.txt',
      targets: file('Upper.txt', 10),
    })
    await record(at(9), 'alice', { action: 'login', display: 'Logged in', targets: [] })
    await record(at(10), null, {
      action: 'failedlogin',
      display: 'Failed login for ghost',
      username: 'ghost',
      failureType: 'username_not_found',
    })
    await record(at(11), 'root', {
      action: 'user_create',
      display: `Created user carol`,
      targets: [{ type: 'user', id: 3, name: 'carol' }],
    })
    await record(at(11), 'root', {
      action: 'permission_create',
      display: 'Granted full on /docs to bob',
      path: 'docs',
    })
  })

  const get = (p: string, key = s.adminKey, o: { accept?: string } = {}) => call(s, 'GET', p, { key, ...o })
  const ids = (r: { body: { id: number }[] }) => r.body.map((a) => a.id)
  /** Newest first, then by id descending: the default order. */
  const expected = (pred: (m: Made) => boolean) =>
    made
      .filter(pred)
      .sort((a, b) => b.at - a.at || b.id - a.id)
      .map((m) => m.id)
  const isFileAt = (p: string) => (m: Made) => m.path.toLowerCase() === p
  const inDocs = (m: Made) => m.path.toLowerCase() === 'docs' || m.path.toLowerCase().startsWith('docs/')
  const when = (m: Made) => new Date(Math.floor(m.at / 1000) * 1000).toISOString().replace('.000Z', 'Z')

  const endpoints = [
    { name: 'files', url: '/history/files/docs/a.txt', pred: isFileAt('docs/a.txt') },
    { name: 'folders', url: '/history/folders/docs', pred: inDocs },
    { name: 'users', url: () => `/history/users/${u.alice.id}`, pred: (m: Made) => m.userId === u.alice.id },
    {
      name: 'login',
      url: '/history/login',
      pred: (m: Made) => m.action === 'login' || m.action === 'failedlogin',
    },
    { name: 'all', url: '/history', pred: () => true },
  ]
  const urlOf = (e: (typeof endpoints)[number]) => (typeof e.url === 'string' ? e.url : e.url())
  const withQuery = (url: string, q: string) => `${url}${url.includes('?') ? '&' : '?'}${q}`

  describe.each(endpoints)('common behaviour: $name', (e) => {
    it('lists the matching actions of the last 24 hours, newest first', async () => {
      const r = await get(urlOf(e))
      expect(r.status).toBe(200)
      expect(ids(r)).toEqual(expected(e.pred))
      expect(ids(r).length).toBeGreaterThan(0)
      expect(ids(r)).not.toContain(old.id)
    })

    it('keeps start_at and later, end_at and earlier (to the second), and refuses a bad date', async () => {
      const list = expected(e.pred)
      const first = made.find((m) => m.id === list.at(-1))!
      const last = made.find((m) => m.id === list[0])!
      const r1 = await get(withQuery(urlOf(e), `start_at=${when(last)}`))
      expect(ids(r1)).toEqual(expected((m) => e.pred(m) && m.at >= last.at))
      const r2 = await get(withQuery(urlOf(e), `end_at=${encodeURIComponent(when(first))}`))
      expect(ids(r2)).toEqual(expected((m) => e.pred(m) && m.at <= first.at))
      const r3 = await get(withQuery(urlOf(e), `start_at=${when(first)}&end_at=${when(last)}`))
      expect(ids(r3)).toEqual(list)
      expectError(await get(withQuery(urlOf(e), 'start_at=yesterday')), 400, 'bad-request/datetime-parse')
      expectError(await get(withQuery(urlOf(e), 'end_at=2040-13-01')), 400, 'bad-request/datetime-parse')
    })

    it('refuses an unknown display mode and an unknown sort field', async () => {
      expectError(await get(withQuery(urlOf(e), 'display=short')), 400, 'bad-request/request-params-invalid')
      expectError(
        await get(withQuery(urlOf(e), 'sort_by[action]=asc')),
        400,
        'bad-request/invalid-filter-field',
      )
    })

    it('sorts by user_id and created_at in both directions, paging exactly both ways', async () => {
      for (const [sort, order] of [
        ['', expected(e.pred)],
        ['sort_by[created_at]=asc', expected(e.pred).reverse()],
        ['sort_by[user_id]=asc', byUser(e.pred, 'asc')],
        ['sort_by[user_id]=desc', byUser(e.pred, 'desc')],
      ] as const) {
        const pages = await walk(withQuery(urlOf(e), `${sort}&per_page=2`))
        expect(pages.ids.flat()).toEqual(order)
        // Back from the last page to the first with the prev cursors.
        for (let i = pages.prev.length - 1; i > 0; i--) {
          const back = await get(
            withQuery(urlOf(e), `${sort}&per_page=2&cursor=${encodeURIComponent(pages.prev[i]!)}`),
          )
          expect(ids(back)).toEqual(pages.ids[i - 1])
        }
      }
    })

    it('shows actions between 24 hours ago and now as the clock moves; older ones stay stored', async () => {
      const stored = await s.container.db
        .selectFrom('actions')
        .select('id')
        .where('id', '=', old.id)
        .execute()
      expect(stored).toHaveLength(1)
      // The rate limiter takes time as running forwards: this key sees only the clock moving on.
      const key = clockKeys[endpoints.indexOf(e)]!
      try {
        clock = old.at + 24 * HOUR - 1000
        const inside = ids(await get(urlOf(e), key))
        if (e.pred(old)) expect(inside).toContain(old.id)
        clock = old.at + 24 * HOUR + 1000
        expect(ids(await get(urlOf(e), key))).not.toContain(old.id)
        clock = t1 + 22 * HOUR + 5 * MINUTE + 30_000
        expect(ids(await get(urlOf(e), key))).toEqual(expected((m) => e.pred(m) && m.at >= clock - 24 * HOUR))
      } finally {
        clock = t1
      }
    })

    it('answers XML: <actions type="array"> of <action>', async () => {
      const r = await get(urlOf(e), s.adminKey, { accept: 'application/xml' })
      expect(r.status).toBe(200)
      expect(r.headers.get('content-type')).toContain('application/xml')
      expect(r.text).toContain('<actions type="array">')
      expect(r.text.match(/<action>\s*<id /g)).toHaveLength(expected(e.pred).length)
      expect(r.text).toContain('<user_is_from_parent_site type="boolean">false</user_is_from_parent_site>')
    })
  })

  function byUser(pred: (m: Made) => boolean, dir: 'asc' | 'desc') {
    const sorted = made.filter(pred).sort((a, b) => (a.userId ?? 0) - (b.userId ?? 0) || a.id - b.id)
    return (dir === 'asc' ? sorted : sorted.reverse()).map((m) => m.id)
  }

  async function walk(url: string) {
    const out = { ids: [] as number[][], prev: [] as (string | null)[] }
    let r = await get(url)
    for (;;) {
      expect(r.status).toBe(200)
      out.ids.push(ids(r))
      out.prev.push(r.headers.get('x-files-cursor-prev'))
      const next = r.headers.get('x-files-cursor-next')
      if (!next) return out
      expect(out.ids.length).toBeLessThan(20)
      r = await get(withQuery(url, `cursor=${encodeURIComponent(next)}`))
    }
  }

  describe('GET /history/files/{path}', () => {
    it('shows the actions on a path, whatever the case or encoding of the path', async () => {
      const want = expected(isFileAt('docs/a.txt'))
      expect(made.filter((m) => want.includes(m.id)).map((m) => m.action)).toEqual([
        'create',
        'read',
        'update',
      ])
      for (const p of ['docs/a.txt', 'docs%2Fa.txt', 'DOCS/A.TXT', '/docs/a.txt/']) {
        expect(ids(await get(`/history/files/${p}`))).toEqual(want)
      }
    })

    it('lists a move or copy under the path it went to, not the one it left', async () => {
      const b = await get('/history/files/docs/sub/b.txt')
      expect(b.body.map((a: { action: string; source: string }) => [a.action, a.source])).toEqual([
        ['move', 'docs/a.txt'],
      ])
      const c = await get('/history/files/other/c.txt')
      expect(c.body.map((a: { action: string }) => a.action)).toEqual(['destroy', 'copy'])
    })

    it('renders every field of an Action', async () => {
      const r = await get('/history/files/docs/sub/b.txt')
      const move = made.find((m) => m.action === 'move')!
      expect(r.body[0]).toEqual({
        id: move.id,
        path: 'docs/sub/b.txt',
        when: when(move),
        destination: 'docs/sub/b.txt',
        display: 'Moved a.txt to /docs/sub/b.txt',
        ip: '192.0.2.7',
        source: 'docs/a.txt',
        targets: [{ type: 'file', id: 7, name: 'b.txt' }],
        user_id: u.alice.id,
        username: u.alice.username,
        action: 'move',
        failure_type: null,
        interface: 'restapi',
        user_is_from_parent_site: false,
      })
    })

    it('needs a path, and a valid one', async () => {
      expectError(await get('/history/files/'), 400, 'bad-request/request-params-required')
      expectError(await get('/history/files/docs%2F..%2Fetc'), 400, 'bad-request/invalid-path')
      expectError(await get(`/history/files/${'a'.repeat(5001)}`), 422, 'processing-failure/path-too-long')
    })

    it('accepts the path repeated in the query string (Files.com SDK) and ignores it', async () => {
      const r = await get('/history/files/docs/a.txt?path=docs%2Fa.txt')
      expect(ids(r)).toEqual(expected(isFileAt('docs/a.txt')))
    })

    it('does not take /history sorts or filters', async () => {
      expectError(
        await get('/history/files/docs/a.txt?sort_by[path]=asc'),
        400,
        'bad-request/invalid-filter-field',
      )
      expectError(
        await get('/history/files/docs/a.txt?filter[user_id]=1'),
        400,
        'bad-request/invalid-filter-field',
      )
    })
  })

  describe('GET /history/folders/{path}', () => {
    it('covers the folder and everything inside it, not its namesakes', async () => {
      const r = await get('/history/folders/docs')
      const paths = r.body.map((a: { path: string }) => a.path)
      expect(paths).toContain('Docs/Upper.txt')
      expect(paths).toContain('docs/sub/b.txt')
      expect(paths).toContain('docs')
      expect(paths).not.toContain('docsx/z.txt')
      expect(paths).not.toContain('other/c.txt')
      expect(ids(await get('/history/folders/docs/sub'))).toEqual(
        expected((m) => m.path === 'docs/sub/b.txt'),
      )
    })

    it('covers the whole site for the root folder', async () => {
      expect(ids(await get('/history/folders/'))).toEqual(expected(() => true))
    })
  })

  describe('display', () => {
    it('rebuilds file actions as full paths or name and folder; others keep their text', async () => {
      const shown = async (mode: string) => {
        const r = await get(`/history?display=${mode}`)
        return Object.fromEntries(
          r.body.map((a: { action: string; display: string }) => [a.action, a.display]),
        )
      }
      expect(await shown('')).toMatchObject({ move: 'Moved a.txt to /docs/sub/b.txt', login: 'Logged in' })
      expect(await shown('full')).toMatchObject({
        move: 'Moved /docs/a.txt to /docs/sub/b.txt',
        copy: 'Copied /docs/sub/b.txt to /other/c.txt',
        read: 'Downloaded /docs/a.txt',
        destroy: 'Deleted /other/c.txt',
        update: 'Replaced /docs/a.txt',
        login: 'Logged in',
        failedlogin: 'Failed login for ghost',
      })
      expect(await shown('parent')).toMatchObject({
        move: 'Moved a.txt in /docs to b.txt in /docs/sub',
        read: 'Downloaded a.txt in /docs',
        user_create: 'Created user carol',
      })
      const folder = await get('/history/files/docs?display=full')
      expect(folder.body.find((a: { action: string }) => a.action === 'create').display).toBe(
        'Created folder /docs',
      )
    })
  })

  describe('GET /history filters', () => {
    it('filters by user_id, folder and path', async () => {
      const q = (s: string) => get(`/history?${s}`).then(ids)
      expect(await q(`filter[user_id]=${u.bob.id}`)).toEqual(expected((m) => m.userId === u.bob.id))
      expect(await q(`filter_gt[user_id]=${u.bob.id}`)).toEqual(expected((m) => (m.userId ?? 0) > u.bob.id))
      expect(await q('filter[folder]=DOCS')).toEqual(expected((m) => /^docs\/[^/]+$/i.test(m.path)))
      expect(await q('filter[path]=docs/a.txt')).toEqual(expected((m) => m.path === 'docs/a.txt'))
      expect(await q('filter_like[path]=docs/%')).toEqual(
        expected((m) => m.path.toLowerCase().startsWith('docs/')),
      )
      expect(await q('filter_like[path]=%.TXT&filter[user_id]=' + u.alice.id)).toEqual(
        expected((m) => m.path.endsWith('.txt') && m.userId === u.alice.id),
      )
    })

    it('sorts by path and folder across pages', async () => {
      const byPath = made.slice().sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.id - b.id))
      expect((await walk('/history?sort_by[path]=asc&per_page=3')).ids.flat()).toEqual(
        byPath.map((m) => m.id),
      )
      const r = await walk('/history?sort_by[folder]=desc&per_page=3')
      expect(r.ids.flat()).toHaveLength(made.length)
    })

    it('refuses unknown fields and unsupported pairings', async () => {
      expectError(
        await get('/history?filter_like[user_id]=1%25'),
        400,
        'bad-request/invalid-filter-combination',
      )
      expectError(await get('/history?filter[action]=login'), 400, 'bad-request/invalid-filter-field')
      expectError(await get('/history?filter[user_id]=abc'), 400, 'bad-request/request-params-invalid')
    })

    it('refuses a cursor from another list or another sort', async () => {
      const first = await get('/history?per_page=2')
      const cursor = encodeURIComponent(first.headers.get('x-files-cursor-next')!)
      expectError(await get(`/history/login?per_page=2&cursor=${cursor}`), 400, 'bad-request/invalid-cursor')
      expectError(
        await get(`/history?per_page=2&filter[user_id]=1&cursor=${cursor}`),
        400,
        'bad-request/invalid-cursor',
      )
      expectError(
        await get(`/history?per_page=2&sort_by[created_at]=asc&cursor=${cursor}`),
        400,
        'bad-request/invalid-cursor-type-for-sort',
      )
    })
  })

  describe('authorization', () => {
    const adminOnly = () => ['/history', '/history/login', `/history/users/${u.alice.id}`]

    it('gives the admin-only lists to site admins and site-wide keys only', async () => {
      for (const url of adminOnly()) {
        expect((await get(url, k.root)).status).toBe(200)
        expect((await get(url, s.adminKey)).status).toBe(200)
        expectError(await get(url, k.alice), 403, 'not-authorized/site-admin-required')
        expectError(await get(url, k.desktop), 403, 'not-authorized/api-key-only-for-desktop-app')
        expectError(await get(url, k.restricted), 403, 'not-authorized/api-key-is-path-restricted')
        expectError(await get(url, k.none), 403, 'not-authorized/full-permission-required')
      }
    })

    it('gives file and folder history to users who may read the path or see its history', async () => {
      for (const url of ['/history/files/docs/a.txt', '/history/folders/docs', '/history/folders/docs/sub']) {
        expect((await get(url, k.alice)).status).toBe(200)
        expect((await get(url, k.bob)).status).toBe(200)
        expect((await get(url, k.desktop)).status).toBe(200)
        expectError(await get(url, k.carol), 403, 'not-authorized/read-permission-required')
        expectError(await get(url, k.none), 403, 'not-authorized/full-permission-required')
      }
      expectError(await get('/history/folders/', k.alice), 403, 'not-authorized/read-permission-required')
      expectError(
        await get('/history/files/other/c.txt', k.bob),
        403,
        'not-authorized/read-permission-required',
      )
    })

    it('keeps a path-restricted key inside its folder', async () => {
      expect(ids(await get('/history/folders/docs/sub', k.restricted))).toEqual(
        expected((m) => m.path === 'docs/sub/b.txt'),
      )
      expect((await get('/history/files/docs/sub/b.txt', k.restricted)).status).toBe(200)
      for (const url of ['/history/files/docs/a.txt', '/history/folders/docs', '/history/folders/']) {
        expectError(await get(url, k.restricted), 403, 'not-authorized/api-key-is-path-restricted')
      }
    })

    it('takes sessions as well as keys', async () => {
      const sessions = {} as Record<'root' | 'bob', string>
      for (const who of ['root', 'bob'] as const) {
        sessions[who] = await login(s, u[who].username, u[who].password)
        // The login itself is now one of the actions of the last 24 hours.
        const row = await s.container.db
          .selectFrom('actions')
          .select(['id', 'created_at'])
          .where('action', '=', 'login')
          .where('user_id', '=', u[who].id)
          .executeTakeFirstOrThrow()
        made.push({
          id: row.id,
          at: row.created_at,
          action: 'login',
          path: '',
          source: null,
          userId: u[who].id,
        })
      }
      const as = (who: 'root' | 'bob', url: string) => call(s, 'GET', url, { session: sessions[who] })
      expect(ids(await as('root', '/history/login'))).toEqual(
        expected((m) => m.action === 'login' || m.action === 'failedlogin'),
      )
      expect((await as('root', '/history/files/docs/a.txt')).status).toBe(200)
      expect((await as('bob', '/history/folders/docs')).status).toBe(200)
      expectError(await as('bob', '/history/login'), 403, 'not-authorized/site-admin-required')
      expectError(await as('bob', '/history/folders/other'), 403, 'not-authorized/read-permission-required')
    })

    it('refuses a request without credentials', async () => {
      const r = await call(s, 'GET', '/history/files/docs/a.txt')
      expectError(r, 401, 'not-authenticated/authentication-required')
    })
  })

  describe('GET /history/users/{user_id}', () => {
    it('takes an int64 id and the same id repeated in the query (Files.com SDK)', async () => {
      expect(ids(await get(`/history/users/${u.bob.id}?user_id=${u.bob.id}`))).toEqual(
        expected((m) => m.userId === u.bob.id),
      )
      expectError(
        await get(`/history/users/${u.bob.id}?user_id=${u.alice.id}`),
        400,
        'bad-request/request-params-invalid',
      )
      expectError(await get('/history/users/abc'), 400, 'bad-request/request-params-invalid')
      expect(await get('/history/users/999999').then(ids)).toEqual([])
    })
  })
})
