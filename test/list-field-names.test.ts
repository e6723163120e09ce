import { beforeAll, describe, expect, it } from 'vitest'
import { call, dialects, expectError, makeUser, useServer } from './helpers/server.js'

/**
 * Sort and filter field names come from the query string: names that every plain object carries
 * through its prototype (`constructor`, `__proto__`, `toString` …) must be unknown fields like any
 * other, on every list endpoint, never a lookup that finds an inherited function.
 */
const INHERITED = ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf']
const KINDS = ['sort_by', 'filter', 'filter_gt', 'filter_lteq', 'filter_like', 'filter_prefix']

describe.each(dialects)('inherited property names as list fields (%s)', (dialect) => {
  let userId: number
  let webhookExport: number
  let historyExport: number

  const s = useServer(dialect)
  beforeAll(async () => {
    userId = (await makeUser(s)).id
    const a = await call(s, 'POST', '/action_notification_exports', { key: s.adminKey, body: {} })
    const h = await call(s, 'POST', '/history_exports', { key: s.adminKey, body: {} })
    expect([a.status, h.status]).toEqual([201, 201])
    webhookExport = a.body.id
    historyExport = h.body.id
  })

  const sortedLists = () => [
    '/users',
    '/api_keys',
    '/bundles',
    '/inbox_uploads',
    '/permissions',
    '/history',
    '/history/login',
    `/history/users/${userId}`,
    '/history/folders/',
    '/history/files/a.txt',
    '/folders/',
    '/apps',
    '/invoices',
    '/payments',
  ]

  it('refuses them as unknown fields (400 invalid-filter-field) on every list', async () => {
    const seen: string[] = []
    for (const list of sortedLists()) {
      for (const kind of KINDS) {
        for (const field of INHERITED) {
          const q = `${kind}[${field}]=${kind === 'sort_by' ? 'asc' : 'x'}`
          const r = await call(s, 'GET', `${list}?${q}`, { key: s.adminKey })
          seen.push(`${list}?${q} → ${r.status} ${r.body?.type}`)
        }
      }
    }
    expect(seen.filter((l) => !l.endsWith('→ 400 bad-request/invalid-filter-field'))).toEqual([])
  })

  it('refuses them in the nested form (sort_by.constructor) too', async () => {
    for (const list of sortedLists()) {
      const r = await call(s, 'GET', `${list}?filter[constructor][x]=1`, { key: s.adminKey })
      expect(r.status, list).toBeGreaterThanOrEqual(400)
      expect(r.status, list).toBeLessThan(500)
    }
  })

  it('refuses them on export results, which take no sort or filter at all', async () => {
    for (const [list, idField, id] of [
      ['/action_notification_export_results', 'action_notification_export_id', () => webhookExport],
      ['/history_export_results', 'history_export_id', () => historyExport],
    ] as const) {
      for (const kind of KINDS) {
        for (const field of INHERITED) {
          const r = await call(s, 'GET', `${list}?${idField}=${id()}&${kind}[${field}]=asc`, {
            key: s.adminKey,
          })
          expectError(r, 400, 'bad-request/request-params-invalid')
        }
      }
    }
  })

  it('still sorts and filters by real fields', async () => {
    const r = await call(s, 'GET', `/users?sort_by[username]=desc&filter_like[username]=%25`, {
      key: s.adminKey,
    })
    expect(r.status).toBe(200)
  })

  it('takes filter_prefix (sent by the Files.com SDKs) wherever filter_like is taken', async () => {
    const doc = (await call(s, 'GET', '/swagger_doc')).body
    const likes: string[] = []
    for (const [path, ops] of Object.entries<any>(doc.paths)) {
      for (const p of ops.get?.parameters ?? []) {
        const m = /^filter_like\[(.+)\]$/.exec(p.name)
        if (!m) continue
        likes.push(`${path} ${m[1]}`)
        const prefix = ops.get.parameters.find((q: any) => q.name === `filter_prefix[${m[1]}]`)
        expect(prefix, `${path} filter_prefix[${m[1]}]`).toMatchObject({ in: 'query', type: 'string' })
      }
    }
    expect(likes).toEqual(expect.arrayContaining(['/history path', '/users username', '/apps app_type']))
    // History.list(filter_prefix: { path: … }), as the Python SDK sends it.
    const history = await call(s, 'GET', '/history?filter_prefix[path]=docs%2F&sort_by[path]=asc', {
      key: s.adminKey,
    })
    expect(history.status).toBe(200)
    const mine = await makeUser(s, { username: 'Prefix_Me' })
    const users = await call(s, 'GET', '/users?filter_prefix[username]=prefix_', { key: s.adminKey })
    expect(users.body.map((u: { id: number }) => u.id)).toEqual([mine.id])
    const none = await call(s, 'GET', '/users?filter_prefix[username]=prefix%25', { key: s.adminKey })
    expect(none.body).toEqual([])
  })
})
