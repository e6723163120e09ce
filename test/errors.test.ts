import fs from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { XMLParser } from 'fast-xml-parser'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ERRORS } from '../src/api/error-factories.js'
import { ApiError, ERROR_TYPES, errorBody, statusOf, titleOf, WHARF_ERROR_TYPES } from '../src/api/errors.js'
import { buildApp } from '../src/app.js'
import { createLogger, redactUrl } from '../src/logger.js'
import { captureLog } from './helpers/log-capture.js'
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  call,
  dialects,
  expectError,
  makeKey,
  makeUser,
  useServer,
} from './helpers/server.js'

const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@_', parseTagValue: false })
const BASE_FIELDS = ['error', 'http-code', 'instance', 'title', 'type']
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** decisions.md, "Status codes": the HTTP status of each error family. */
const FAMILY_STATUS: Record<string, number> = {
  'bad-request': 400,
  'not-authenticated': 401,
  'not-authorized': 403,
  'not-found': 404,
  'processing-failure': 422,
  'rate-limited': 429,
  'service-unavailable': 503,
  'site-configuration': 403,
}

/**
 * The slugs listed under api-spec.md's "Error types" heading, in the order they appear. The
 * section is copied into test/fixtures so the suite reads nothing outside the repository.
 */
async function specErrorTypes(): Promise<string[]> {
  const specPath = fileURLToPath(new URL('./fixtures/spec-error-types.md', import.meta.url))
  const text = await fs.readFile(specPath, 'utf8')
  const start = text.indexOf('\n### Error types\n')
  expect(start).toBeGreaterThan(-1)
  const end = text.indexOf('\n## ', start + 1)
  const section = text.slice(start, end === -1 ? undefined : end)
  const types: string[] = []
  for (const line of section.split('\n')) {
    const m = /^([a-z-]+): (.+)\.$/.exec(line.trim())
    if (!m) continue
    for (const t of m[2]!.split(',').map((x) => x.trim())) {
      expect(t === m[1] || t.startsWith(`${m[1]}/`), `${t} listed under ${m[1]}`).toBe(true)
      types.push(t)
    }
  }
  return types
}

describe('error types (unit)', () => {
  it('lists exactly the error types of the spec', async () => {
    const spec = await specErrorTypes()
    expect(spec.length).toBeGreaterThan(100)
    expect(new Set(ERROR_TYPES).size).toBe(ERROR_TYPES.length)
    expect([...ERROR_TYPES].sort()).toEqual([...spec].sort())
  })

  it('derives every status from the family table of decisions.md', () => {
    for (const type of ERROR_TYPES) {
      const family = type.split('/')[0]!
      expect(FAMILY_STATUS[family], `family of ${type}`).toBeDefined()
      // The exceptions to the family table (docs/decisions.md: "Requests and responses", and
      // 416 for a range outside the file, which download clients act on).
      const own: Record<string, number> = {
        'bad-request/method-not-allowed': 405,
        'processing-failure/invalid-range': 416,
      }
      const status = own[type] ?? FAMILY_STATUS[family]
      expect(statusOf(type), type).toBe(status)
      const err = new ApiError(type, 'm')
      expect(err.status).toBe(status)
      expect(err.title).toBe(titleOf(type))
    }
    expect(statusOf('internal-server-error')).toBe(500)
  })

  it('has one factory per type, named after its last segment, making an error of that type', () => {
    const types = [...ERROR_TYPES, ...WHARF_ERROR_TYPES, 'internal-server-error'] as const
    const camel = (t: string) =>
      (t.split('/').pop() ?? t).replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())
    expect(Object.keys(ERRORS).sort()).toEqual(types.map(camel).sort())
    for (const type of types) {
      const made = (ERRORS as Record<string, (m: string) => ApiError>)[camel(type)]!('why')
      expect(made).toBeInstanceOf(ApiError)
      expect([made.type, made.message, made.status]).toEqual([type, 'why', statusOf(type)])
    }
  })

  it('titles each type from its last segment, words capitalised', () => {
    expect(titleOf('not-authorized/api-key-is-path-restricted')).toBe('Api Key Is Path Restricted')
    expect(titleOf('not-found')).toBe('Not Found')
    expect(titleOf('processing-failure/model-save-error')).toBe('Model Save Error')
    expect(titleOf('not-authenticated/authentication-required')).toBe('Authentication Required')
    expect(titleOf('bad-request/request-param-path-cannot-have-trailing-whitespace')).toBe(
      'Request Param Path Cannot Have Trailing Whitespace',
    )
    for (const type of ERROR_TYPES) expect(titleOf(type)).toMatch(/^[A-Z][a-z0-9]*( [A-Z][a-z0-9]*)*$/)
  })

  it('builds model-save bodies with errors, model_errors and model_error_keys', () => {
    const err = ApiError.modelSave({
      permission_set: ['is not valid'],
      expires_at: ['must be in the future'],
    })
    expect(err.status).toBe(422)
    expect(err.type).toBe('processing-failure/model-save-error')
    const body = errorBody(err, 'abc')
    expect(Object.keys(body).sort()).toEqual(
      [...BASE_FIELDS, 'errors', 'model_error_keys', 'model_errors'].sort(),
    )
    expect(body.error).toBe('Permission set is not valid')
    expect(body.errors).toEqual(['Permission set is not valid', 'Expires at must be in the future'])
    expect(body.model_errors).toEqual({
      permission_set: ['is not valid'],
      expires_at: ['must be in the future'],
    })
    expect(body.model_error_keys).toEqual(body.model_errors)
    expect(body.instance).toBe('abc')
  })
})

describe.each(dialects)('error bodies (%s)', (dialect) => {
  const s = useServer(dialect)

  it('answers an unknown route with 404 not-found, in JSON', async () => {
    for (const p of ['/no_such_thing', '/no_such_thing.json', '/api_keys/1/nothing']) {
      const r = await call(s, 'GET', p, { key: s.adminKey })
      expect(r.status).toBe(404)
      expect(r.headers.get('content-type')).toMatch(/^application\/json/)
      expect(Object.keys(r.body).sort()).toEqual(BASE_FIELDS)
      expect(r.body.type).toBe('not-found')
      expect(r.body.title).toBe('Not Found')
      expect(r.body['http-code']).toBe(404)
    }
    // Also without credentials and outside the API prefix: the 404 is not an authentication error.
    const anon = await call(s, 'GET', '/no_such_thing')
    expect(anon.status).toBe(404)
    expect(anon.body.type).toBe('not-found')
    const outside = await fetch(`${s.url}/not-the-api`)
    expect(outside.status).toBe(404)
    expect(((await outside.json()) as any).type).toBe('not-found')
  })

  it('answers a method a known path does not have with 405 and Allow, in the error body', async () => {
    const cases: [string, string, string][] = [
      ['PUT', '/api_key', 'DELETE, GET, HEAD, PATCH'],
      ['POST', '/users/1', 'DELETE, GET, HEAD, PATCH'],
      ['PATCH', '/users', 'GET, HEAD, POST'],
      ['PUT', '/files/a/b.txt', 'DELETE, GET, HEAD, POST'],
      ['OPTIONS', '/api_keys.json', 'GET, HEAD, POST'],
    ]
    for (const [method, p, allow] of cases) {
      const r = await call(s, method, p, { key: s.adminKey, body: {} })
      expectError(r, 405, 'bad-request/method-not-allowed')
      expect(Object.keys(r.body).sort()).toEqual(BASE_FIELDS)
      expect(r.headers.get('allow'), `${method} ${p}`).toBe(allow)
      expect(r.body.error).toBe(
        `${method} is not allowed on /api/rest/v1${p.replace('.json', '')}: use ${allow}`,
      )
    }
    // Without credentials too: which methods a path has is no secret (the Swagger document lists them).
    const anon = await call(s, 'DELETE', '/sessions/x')
    expect(anon.status).toBe(404)
    const anon2 = await call(s, 'PUT', '/sessions')
    expectError(anon2, 405, 'bad-request/method-not-allowed')
    expect(anon2.headers.get('allow')).toBe('DELETE, POST')
  })

  it('answers QUERY and unknown methods like any method the path lacks, body or not', async () => {
    for (const [method, o] of [
      ['QUERY', {}],
      ['QUERY', { raw: 'a=b', contentType: 'text/plain' }],
      ['PURGE', {}],
    ] as const) {
      const r = await call(s, method, '/users', { key: s.adminKey, ...o })
      expectError(r, 405, 'bad-request/method-not-allowed')
      expect(r.headers.get('allow')).toBe('GET, HEAD, POST')
    }
    const unknown = await call(s, 'QUERY', '/no_such_thing', { raw: 'a=b', contentType: 'text/plain' })
    expectError(unknown, 404, 'not-found')
  })

  it('answers a wrong method on the web interface in the same way', async () => {
    const r = await fetch(`${s.url}/`, { method: 'POST' })
    expect(r.status).toBe(405)
    // OPTIONS is WebDAV's, for Microsoft Office (on by default).
    expect(r.headers.get('allow')).toBe('GET, HEAD, OPTIONS')
    expect(((await r.json()) as any).type).toBe('bad-request/method-not-allowed')
  })

  it('answers a wrong method in XML when XML is asked for', async () => {
    const r = await call(s, 'PUT', '/users.xml', { key: s.adminKey })
    expect(r.status).toBe(405)
    expect(r.headers.get('allow')).toBe('GET, HEAD, POST')
    expect(xml.parse(r.text).error_response.type).toBe('bad-request/method-not-allowed')
  })

  it('answers an unknown route with 404 not-found, in XML', async () => {
    for (const [p, accept] of [
      ['/no_such_thing.xml', undefined],
      ['/no_such_thing', 'application/xml'],
    ] as const) {
      const r = await call(s, 'GET', p, { key: s.adminKey, ...(accept ? { accept } : {}) })
      expect(r.status).toBe(404)
      expect(r.headers.get('content-type')).toMatch(/^application\/xml/)
      const e = xml.parse(r.text).error_response
      expect(Object.keys(e).sort()).toEqual(BASE_FIELDS)
      expect(e.type).toBe('not-found')
      expect(e['http-code']).toEqual({ '#text': '404', '@_type': 'integer' })
      expect(e.instance).toMatch(UUID)
    }
  })

  it('gives every error body exactly the five fields and a fresh instance', async () => {
    const instances = new Set<string>()
    const cases: [string, string, Parameters<typeof call>[3], number, string][] = [
      ['GET', '/api_key', {}, 401, 'not-authenticated/authentication-required'],
      ['GET', '/api_key', {}, 401, 'not-authenticated/authentication-required'],
      ['GET', '/api_key', { key: 'wrong' }, 401, 'not-authenticated/authentication-required'],
      ['GET', '/api_keys/999999', { key: s.adminKey }, 404, 'not-found/api-key-not-found'],
      ['GET', '/api_keys/abc', { key: s.adminKey }, 400, 'bad-request/request-params-invalid'],
      ['GET', '/api_keys?per_page=0', { key: s.adminKey }, 400, 'bad-request/request-params-invalid'],
      [
        'POST',
        '/api_keys',
        { key: s.adminKey, body: { site_wide: true, bogus: 1 } },
        400,
        'bad-request/request-params-invalid',
      ],
      [
        'POST',
        '/api_keys',
        { key: s.adminKey, raw: '{', contentType: 'application/json' },
        400,
        'bad-request/invalid-body',
      ],
      [
        'POST',
        '/sessions',
        { body: { username: 'nobody', password: 'wrong-password' } },
        401,
        'not-authenticated/invalid-username-or-password',
      ],
      ['POST', '/sessions', { body: { username: 'nobody' } }, 400, 'bad-request/request-params-required'],
    ]
    for (const [method, p, opts, status, type] of cases) {
      const r = await call(s, method, p, opts)
      expect(r.status, `${method} ${p}`).toBe(status)
      expect(Object.keys(r.body).sort(), `${method} ${p}`).toEqual(BASE_FIELDS)
      expect(r.body.type).toBe(type)
      expect(r.body['http-code']).toBe(status)
      expect(r.body.title).toBe(titleOf(type as any))
      expect(typeof r.body.error).toBe('string')
      expect(r.body.error.length).toBeGreaterThan(0)
      expect(r.body.instance).toMatch(UUID)
      instances.add(r.body.instance)
    }
    expect(instances.size).toBe(cases.length)
  })

  it('adds errors, model_errors and model_error_keys to a model-save error', async () => {
    const user = await makeUser(s)
    const r = await call(s, 'POST', '/api_keys', {
      key: s.adminKey,
      body: { user_id: user.id, permission_set: 'bogus' },
    })
    expect(r.status).toBe(422)
    expect(Object.keys(r.body).sort()).toEqual(
      [...BASE_FIELDS, 'errors', 'model_error_keys', 'model_errors'].sort(),
    )
    expect(r.body.type).toBe('processing-failure/model-save-error')
    expect(r.body.title).toBe('Model Save Error')
    expect(r.body['http-code']).toBe(422)
    expect(Object.keys(r.body.model_errors)).toEqual(['permission_set'])
    expect(r.body.model_errors.permission_set).toHaveLength(1)
    expect(r.body.errors).toEqual([`Permission set ${r.body.model_errors.permission_set[0]}`])
    expect(Object.keys(r.body.model_error_keys)).toEqual(['permission_set'])
    expect(r.body.model_error_keys.permission_set).toHaveLength(1)
    // Nothing was created.
    const list = await call(s, 'GET', `/api_keys?user_id=${user.id}`, { key: s.adminKey })
    expect(list.body).toEqual([])
  })

  it('renders a model-save error in XML with the same members', async () => {
    const user = await makeUser(s)
    const r = await call(s, 'POST', '/api_keys.xml', {
      key: s.adminKey,
      raw: `<api-key><user_id>${user.id}</user_id><permission_set>bogus</permission_set><expires_at>2001-01-01</expires_at></api-key>`,
      contentType: 'application/xml',
    })
    expect(r.status).toBe(422)
    const e = xml.parse(r.text).error_response
    expect(Object.keys(e).sort()).toEqual(
      [...BASE_FIELDS, 'errors', 'model_error_keys', 'model_errors'].sort(),
    )
    expect(e.type).toBe('processing-failure/model-save-error')
    expect(e.errors['@_type']).toBe('array')
    expect(Object.keys(e.model_errors).sort()).toEqual(['expires_at', 'permission_set'])
    expect(e.model_errors.permission_set['@_type']).toBe('array')
  })
})

describe.each(dialects)('unexpected failures and the server log (%s)', (dialect) => {
  let app: FastifyInstance
  let base: string
  let log: ReturnType<typeof captureLog>
  const BOOM = 'simulated failure at /var/secret/internal/path'
  let failing = false

  const s = useServer(dialect)
  beforeAll(async () => {
    log = captureLog()
    const apiKeys = s.container.services.apiKeys
    // The same services, but GET /api_key throws a plain Error while `failing` is set.
    const wrapped = new Proxy(apiKeys, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver)
        if (prop === 'getCurrent') {
          return async (...args: unknown[]) => {
            if (failing) throw new Error(BOOM)
            return (value as (...a: unknown[]) => unknown).apply(target, args)
          }
        }
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    const container = { ...s.container, services: { ...s.container.services, apiKeys: wrapped } }
    app = await buildApp(container, { logger: createLogger('info', log.stream) })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const addr = app.server.address()
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/api/rest/v1`
  })
  afterAll(async () => {
    await app?.close()
  })

  it('answers 500 with a generic message and logs the same instance', async () => {
    failing = true
    try {
      const r = await fetch(`${base}/api_key`, { headers: { 'X-ServiceAPI-Key': s.adminKey } })
      expect(r.status).toBe(500)
      const body = (await r.json()) as Record<string, any>
      expect(Object.keys(body).sort()).toEqual(BASE_FIELDS)
      expect(body['http-code']).toBe(500)
      expect(body.type).toBe('internal-server-error')
      expect(body.instance).toMatch(UUID)
      expect(JSON.stringify(body)).not.toContain('simulated')
      expect(JSON.stringify(body)).not.toContain('/var/secret')

      const logged = log.records().filter((rec) => rec['instance'] === body.instance)
      expect(logged).toHaveLength(1)
      expect(logged[0]!['level']).toBe(50)
      expect(logged[0]!['err'].message).toBe(BOOM)
      expect(logged[0]!['err'].stack).toContain('Error')

      const x = await fetch(`${base}/api_key.xml`, { headers: { 'X-ServiceAPI-Key': s.adminKey } })
      expect(x.status).toBe(500)
      const e = xml.parse(await x.text()).error_response
      expect(e.type).toBe('internal-server-error')
      expect(log.records().some((rec) => rec['instance'] === e.instance)).toBe(true)
      expect(e.instance).not.toBe(body.instance)
    } finally {
      failing = false
    }
    const ok = await fetch(`${base}/api_key`, { headers: { 'X-ServiceAPI-Key': s.adminKey } })
    expect(ok.status).toBe(200)
  })

  it('keeps API keys, session ids and passwords out of the log', async () => {
    const user = await makeUser(s, { password: 'user-secret-password-42' })
    const userKey = await makeKey(s, user.id)
    const before = log.lines.length
    const send = (p: string, init: RequestInit = {}) => fetch(`${base}${p}`, init)
    const json = { 'Content-Type': 'application/json' }

    // A key in each header form, on a success, on a 401 and on a 500.
    await send('/api_key', { headers: { 'X-ServiceAPI-Key': userKey.key } })
    await send('/api_key', { headers: { 'X-FilesAPI-Key': userKey.key } })
    const basic = Buffer.from(`${userKey.key}:x`).toString('base64')
    await send('/api_key', { headers: { Authorization: `Basic ${basic}` } })
    await send('/api_key', { headers: { 'X-ServiceAPI-Key': `${userKey.key.slice(0, 60)}ffff` } })
    failing = true
    try {
      await send('/api_key', { headers: { 'X-ServiceAPI-Key': userKey.key } })
    } finally {
      failing = false
    }
    // Passwords: a good login, a bad one, and one sent in the query string.
    const login = await send('/sessions', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ username: user.username, password: 'user-secret-password-42' }),
    })
    expect(login.status).toBe(201)
    const session = ((await login.json()) as { id: string }).id
    await send('/api_key', { headers: { 'X-ServiceAPI-Auth': session } })
    await send('/sessions', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ username: ADMIN_USERNAME, password: 'admin-wrong-password-77' }),
    })
    await send(`/sessions?username=${ADMIN_USERNAME}&password=${encodeURIComponent(ADMIN_PASSWORD)}`, {
      method: 'POST',
    })
    await send(`/api_key?api_key=${userKey.key}`)

    const written = log.lines.slice(before)
    expect(written.length).toBeGreaterThan(10)
    for (const secret of [
      userKey.key,
      userKey.key.slice(0, 60),
      basic,
      session,
      'user-secret-password-42',
      'admin-wrong-password-77',
      ADMIN_PASSWORD,
      s.adminKey,
    ]) {
      // The whole log: the 500 test above also sent the admin key.
      for (const line of log.lines) expect(line).not.toContain(secret)
    }
    // The requests themselves are still logged (the log is useful, just not leaky).
    expect(written.some((l) => l.includes(`/sessions?username=${ADMIN_USERNAME}&password=[redacted]`))).toBe(
      true,
    )
  })

  it('redacts only the values of secret-looking query parameters', () => {
    expect(redactUrl('/api/rest/v1/api_keys?per_page=10&cursor=abc')).toBe(
      '/api/rest/v1/api_keys?per_page=10&cursor=abc',
    )
    expect(redactUrl('/x?username=a&password=p%20w&Api%5FKey=k&sig=s&flag')).toBe(
      '/x?username=a&password=[redacted]&Api%5FKey=[redacted]&sig=[redacted]&flag',
    )
    expect(redactUrl('/x')).toBe('/x')
    expect(redactUrl('/api/rest/v1/public/bundles/s3cret/files/a.txt')).toBe(
      '/api/rest/v1/public/bundles/[redacted]/files/a.txt',
    )
    expect(redactUrl('/f/s3cret')).toBe('/f/[redacted]')
    expect(redactUrl('/api/rest/v1/public/bundle_zips/tok~sig/x.zip')).toBe(
      '/api/rest/v1/public/bundle_zips/[redacted]/x.zip',
    )
    expect(redactUrl('/api/rest/v1/zip_downloads/tok~sig/docs.zip')).toBe(
      '/api/rest/v1/zip_downloads/[redacted]/docs.zip',
    )
  })
})
