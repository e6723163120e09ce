import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import Files from 'files.com/lib/Files.js'
import App from 'files.com/lib/models/App.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type App as AppJson, loadAppCatalog } from '../src/modules/apps/app-catalog.js'
import { call, dialects, expectError, login, makeKey, makeUser, useServer } from './helpers/server.js'
import { type Recorder, resetSdk, startRecorder } from './sdk/sdk.js'

const catalog = loadAppCatalog()

/** The order the spec's keyset paging promises, worked out here independently of the server. */
function expectedOrder(field: 'name' | 'app_type' | 'featured', dir: 'asc' | 'desc', apps = catalog) {
  const key = (a: AppJson): (string | number)[] =>
    field === 'name'
      ? [a.name.toLowerCase(), a.name]
      : field === 'featured'
        ? [a.featured ? 1 : 0, a.name]
        : [a.app_type, a.name]
  const cmp = (x: (string | number)[], y: (string | number)[]) => {
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1
    return 0
  }
  const sign = dir === 'asc' ? 1 : -1
  return [...apps].sort((a, b) => sign * cmp(key(a), key(b))).map((a) => a.name)
}

describe.each(dialects)('GET /apps (%s)', (dialect) => {
  let rec: Recorder
  const s = useServer(dialect)
  beforeAll(async () => {
    rec = await startRecorder(s.url)
  })
  afterAll(async () => {
    await rec?.close()
  })
  const names = (r: { body: AppJson[] }) => r.body.map((a) => a.name)
  const get = (query: string) => call(s, 'GET', `/apps${query}`, { key: s.adminKey })

  /** Every page of a list, following X-Service-Cursor-Next (or -Prev), as names. */
  async function walk(query: string, start?: string, dir: 'next' | 'prev' = 'next'): Promise<string[]> {
    const seen: string[] = []
    let cursor = start
    for (let i = 0; i <= catalog.length + 1; i++) {
      const r = await get(`?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
      expect(r.status).toBe(200)
      seen.push(...(dir === 'next' ? names(r) : names(r).reverse()))
      const next = r.headers.get(`x-service-cursor-${dir}`)
      if (!next) return seen
      cursor = next
    }
    throw new Error('the cursors never ended')
  }

  it('lists the whole default catalog in name order, every field present, links made absolute', async () => {
    const r = await get('')
    expect(r.status).toBe(200)
    expect(names(r)).toEqual(expectedOrder('name', 'asc'))
    expect(r.headers.get('x-service-cursor-next')).toBeNull()
    expect(r.headers.get('x-service-cursor-prev')).toBeNull()
    const hooks = r.body.find((a: AppJson) => a.name === 'Outbound webhooks')
    expect(Object.keys(hooks).sort()).toEqual(Object.keys(catalog[0]!).sort())
    expect(hooks).toMatchObject({
      app_type: 'folder_behavior',
      folder_behavior_type: 'webhook',
      featured: true,
    })
    expect(hooks.documentation_links).toEqual({ api: `${s.url}/api/rest/v1/swagger_doc` })
    const js = r.body.find((a: AppJson) => a.name === 'Files.com JavaScript SDK')
    expect(js.documentation_links.npm).toBe('https://www.npmjs.com/package/files.com')
    expect(js).toMatchObject({
      icon_url: null,
      logo_url: null,
      screenshot_list_urls: [],
      sso_strategy_type: null,
    })
  })

  it('is what the files.com SDK reads with App.list, across pages', async () => {
    resetSdk(rec.url)
    Files.setApiKey(s.adminKey)
    const apps = await App.list({ per_page: 3 })
    expect(apps.map((a) => a.getName())).toEqual(expectedOrder('name', 'asc'))
    expect(apps[0]).toBeInstanceOf(App)
    const featured = await App.list({ filter: { featured: true }, sort_by: { name: 'desc' } })
    expect(featured.map((a) => a.name)).toEqual(
      expectedOrder('name', 'desc').filter((n) => catalog.find((a) => a.name === n)!.featured),
    )
    // Auto-pagination went through the cursors: one request per page of three.
    expect(rec.requests.filter((q) => q.url.startsWith('/api/rest/v1/apps')).length).toBe(
      Math.ceil(catalog.length / 3) + 1,
    )
  })

  it('answers in XML with the apps / app roots and nested links', async () => {
    const r = await call(s, 'GET', '/apps.xml?filter[app_type]=folder_behavior', { key: s.adminKey })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toMatch(/^application\/xml/)
    expect(r.text).toContain('<apps type="array">\n  <app>\n    <name>Outbound webhooks</name>')
    expect(r.text).toContain('<featured type="boolean">true</featured>')
    expect(r.text).toContain(`<documentation_links>\n      <api>${s.url}/api/rest/v1/swagger_doc</api>`)
    expect(r.text).toContain('<screenshot_list_urls type="array"/>')
    expect(r.text).toContain('<icon_url nil="true"/>')
    expect(r.text.match(/<app>/g)).toHaveLength(1)
  })

  it('pages one entry at a time through the whole catalog, forward and back', async () => {
    const forward = await walk('per_page=1')
    expect(forward).toEqual(expectedOrder('name', 'asc'))
    const last = await get(`?per_page=1&cursor=${encodeURIComponent(await cursorToLast())}`)
    expect(names(last)).toEqual([forward.at(-1)])
    const back = await walk('per_page=1', last.headers.get('x-service-cursor-prev')!, 'prev')
    expect(back).toEqual(forward.slice(0, -1).reverse())
  })

  async function cursorToLast(): Promise<string> {
    let cursor = ''
    for (let i = 0; i < catalog.length - 1; i++) {
      const r = await get(`?per_page=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
      cursor = r.headers.get('x-service-cursor-next')!
    }
    return cursor
  }

  for (const field of ['name', 'app_type', 'featured'] as const) {
    for (const dir of ['asc', 'desc'] as const) {
      it(`sorts by ${field} ${dir}, ties by name, page by page`, async () => {
        expect(names(await get(`?sort_by[${field}]=${dir}`))).toEqual(expectedOrder(field, dir))
        expect(await walk(`sort_by[${field}]=${dir}&per_page=2`)).toEqual(expectedOrder(field, dir))
      })
    }
  }

  it('filters on app_type and featured, alone and together', async () => {
    const byType = (t: string) => expectedOrder('name', 'asc').filter((n) => appNamed(n).app_type === t)
    expect(names(await get('?filter[app_type]=sdk'))).toEqual(byType('sdk'))
    expect(names(await get('?filter[app_type]=SDK'))).toEqual(byType('sdk'))
    expect(names(await get('?filter[app_type]=client_app'))).toEqual(['wharf command line'])
    expect(names(await get('?filter[app_type]=sso'))).toEqual([])
    expect(names(await get('?filter_like[app_type]=%25app%25'))).toEqual(
      expectedOrder('name', 'asc').filter((n) => appNamed(n).app_type.includes('app')),
    )
    const featured = expectedOrder('name', 'asc').filter((n) => appNamed(n).featured)
    expect(featured.length).toBeGreaterThan(0)
    expect(names(await get('?filter[featured]=true'))).toEqual(featured)
    expect(names(await get('?filter[featured]=0'))).toEqual(
      expectedOrder('name', 'asc').filter((n) => !appNamed(n).featured),
    )
    expect(names(await get('?filter[featured]=true&filter[app_type]=sdk'))).toEqual([
      'Files.com JavaScript SDK',
    ])
    expect(await walk('filter[app_type]=sdk&per_page=1')).toEqual(byType('sdk'))
  })

  it('refuses bad paging, sorting and filtering with the exact error', async () => {
    for (const pp of ['0', '-1', '10001', 'abc', '1.5'])
      expectError(await get(`?per_page=${pp}`), 400, 'bad-request/request-params-invalid')
    expectError(await get('?cursor=nonsense'), 400, 'bad-request/invalid-cursor')
    const next = (await get('?per_page=1')).headers.get('x-service-cursor-next')!
    const tampered = `${next.slice(0, -2)}${next.endsWith('AA') ? 'BB' : 'AA'}`
    expectError(await get(`?per_page=1&cursor=${tampered}`), 400, 'bad-request/invalid-cursor')
    const c = encodeURIComponent(next)
    expectError(
      await get(`?cursor=${c}&sort_by[featured]=asc`),
      400,
      'bad-request/invalid-cursor-type-for-sort',
    )
    expectError(await get(`?cursor=${c}&filter[featured]=true`), 400, 'bad-request/invalid-cursor')
    // A cursor of another list, signed with the same secret, is refused too.
    await makeKey(s, null)
    await makeKey(s, null)
    const keysCursor = (await call(s, 'GET', '/api_keys?per_page=1', { key: s.adminKey })).headers.get(
      'x-service-cursor-next',
    )!
    expectError(await get(`?cursor=${encodeURIComponent(keysCursor)}`), 400, 'bad-request/invalid-cursor')
    expectError(await get('?sort_by[short_description]=asc'), 400, 'bad-request/invalid-filter-field')
    expectError(await get('?filter[name]=REST%20API'), 400, 'bad-request/invalid-filter-field')
    expectError(await get('?filter_gt[featured]=0'), 400, 'bad-request/invalid-filter-combination')
    expectError(await get('?sort_by[name]=up'), 400, 'bad-request/request-params-invalid')
    expectError(await get('?filter[featured]=maybe'), 400, 'bad-request/request-params-invalid')
    expectError(await get('?colour=blue'), 400, 'bad-request/request-params-invalid')
  })

  it('needs credentials; sessions and full keys of any user read it, restricted keys do not', async () => {
    expectError(await call(s, 'GET', '/apps'), 401, 'not-authenticated/authentication-required')
    expectError(
      await call(s, 'GET', '/apps', { key: 'f'.repeat(64) }),
      401,
      'not-authenticated/authentication-required',
    )
    const u = await makeUser(s)
    const session = await login(s, u.username, u.password)
    expect((await call(s, 'GET', '/apps', { session })).status).toBe(200)
    const own = await makeKey(s, u.id)
    expect(names(await call(s, 'GET', '/apps', { key: own.key }))).toEqual(expectedOrder('name', 'asc'))
    const desktop = await makeKey(s, u.id, { permission_set: 'desktop_app' })
    expectError(
      await call(s, 'GET', '/apps', { key: desktop.key }),
      403,
      'not-authorized/api-key-only-for-desktop-app',
    )
    const none = await makeKey(s, u.id, { permission_set: 'none' })
    expectError(
      await call(s, 'GET', '/apps', { key: none.key }),
      403,
      'not-authorized/full-permission-required',
    )
  })
})

function appNamed(name: string): AppJson {
  return catalog.find((a) => a.name === name)!
}

describe.each(dialects)('GET /apps with APPS_FILE (%s)', (dialect) => {
  let dir: string
  let file: string
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-apps-'))
    file = path.join(dir, 'apps.json')
    const own = {
      extends: 'default',
      apps: [
        { name: 'rest api', app_type: 'app_integration', short_description: 'Replaced by the operator' },
        {
          name: 'Acme SFTP bridge',
          app_type: 'remote_server',
          remote_server_type: 'sftp',
          featured: true,
          documentation_links: { guide: '/docs/acme', vendor: 'https://acme.example/sftp' },
        },
      ],
    }
    await fs.writeFile(file, JSON.stringify(own))
  })
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true })
  })
  const s = useServer(dialect, () => ({ APPS_FILE: file }))

  it('serves the defaults plus the operator’s entries, replacing the one of the same name', async () => {
    const r = await call(s, 'GET', '/apps?filter[featured]=true', { key: s.adminKey })
    expect(r.body.map((a: AppJson) => a.name)).toEqual([
      'Acme SFTP bridge',
      ...expectedOrder('name', 'asc').filter((n) => appNamed(n).featured),
    ])
    expect(r.body[0].documentation_links).toEqual({
      guide: `${s.url}/docs/acme`,
      vendor: 'https://acme.example/sftp',
    })
    const all = await call(s, 'GET', '/apps', { key: s.adminKey })
    expect(all.body).toHaveLength(catalog.length + 1)
    const rest = all.body.filter((a: AppJson) => a.name.toLowerCase() === 'rest api')
    expect(rest).toEqual([
      expect.objectContaining({ name: 'rest api', short_description: 'Replaced by the operator' }),
    ])
  })
})
