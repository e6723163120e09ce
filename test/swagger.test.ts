import SwaggerParser from '@apidevtools/swagger-parser'
import { Type } from '@sinclair/typebox'
import { beforeAll, describe, expect, it } from 'vitest'
import { API_PREFIX } from '../src/http/format.js'
import { toSwagger2 } from '../src/http/routes/swagger.js'
import { listQuery } from '../src/http/schemas.js'
import { call, dialects, type TestServer, useServer } from './helpers/server.js'

/** Every route Fastify serves, as registered, HEAD left out. */
function fastifyRoutes(s: TestServer): { method: string; url: string }[] {
  const routes = s.app.routeTable
    .filter((r) => r.method !== 'HEAD')
    .map((r) => ({ method: r.method, url: r.url }))
  // The table is right only if Fastify agrees that each route exists.
  for (const r of routes) expect(s.app.hasRoute(r as any), `${r.method} ${r.url}`).toBe(true)
  return routes
}

const toSwaggerPath = (url: string) =>
  url
    .slice(API_PREFIX.length)
    .replace(/:([A-Za-z0-9_]+)/g, '{$1}')
    .replace(/\*$/, '{path}')

const SCHEMA_TYPES = ['string', 'number', 'integer', 'boolean', 'array', 'object', 'file']
const PARAM_TYPES = ['string', 'number', 'integer', 'boolean', 'array', 'file']
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch']

/** Structural checks of Swagger 2.0 schema objects: one type, items on arrays, resolvable $ref. */
function checkSchema(schema: any, where: string, definitions: Record<string, unknown>): void {
  expect(schema !== null && typeof schema === 'object', where).toBe(true)
  if (schema.$ref !== undefined) {
    const m = /^#\/definitions\/(.+)$/.exec(schema.$ref)
    expect(m, `${where}: $ref ${schema.$ref}`).not.toBeNull()
    expect(definitions[m![1]!], `${where}: $ref ${schema.$ref} resolves`).toBeDefined()
    return
  }
  if (schema.type !== undefined) {
    expect(typeof schema.type, `${where}: type must be one name in Swagger 2`).toBe('string')
    expect(SCHEMA_TYPES, `${where}: type ${schema.type}`).toContain(schema.type)
  }
  expect(schema.patternProperties, `${where}: patternProperties is not Swagger 2`).toBeUndefined()
  if (schema.type === 'array') {
    expect(schema.items, `${where}: array without items`).toBeDefined()
    checkSchema(schema.items, `${where}.items`, definitions)
  }
  for (const [k, v] of Object.entries(schema.properties ?? {})) checkSchema(v, `${where}.${k}`, definitions)
  if (typeof schema.additionalProperties === 'object') {
    checkSchema(schema.additionalProperties, `${where}.additionalProperties`, definitions)
  }
  if (schema.required !== undefined) {
    expect(Array.isArray(schema.required), `${where}: required`).toBe(true)
    for (const r of schema.required)
      expect(Object.keys(schema.properties ?? {}), `${where}: required ${r}`).toContain(r)
  }
}

describe('toSwagger2 (unit)', () => {
  it('turns [type, null] into one type marked x-nullable, leaving fields named type alone', () => {
    const out = toSwagger2({
      type: 'object',
      required: ['type'],
      properties: {
        type: { type: 'string' },
        maybe: { type: ['integer', 'null'], 'x-nullable': true },
        list: { type: 'array', items: { type: ['string', 'null'] } },
      },
    })
    expect(out).toEqual({
      type: 'object',
      required: ['type'],
      properties: {
        type: { type: 'string' },
        maybe: { type: 'integer', 'x-nullable': true },
        list: { type: 'array', items: { type: 'string', 'x-nullable': true } },
      },
    })
  })

  it('declares a list endpoint’s valid sort and filter keys when given its fields', () => {
    const q = listQuery(
      { user_id: Type.Optional(Type.String()) },
      {
        sort: { expires_at: {} },
        filter: { expires_at: { type: 'datetime' }, name: { type: 'string' }, on: { type: 'boolean' } },
      },
    )
    const keys = Object.keys(q.properties).sort()
    expect(keys).toEqual(
      [
        'user_id',
        'cursor',
        'per_page',
        'page',
        'sort_by[expires_at]',
        ...['filter', 'filter_gt', 'filter_gteq', 'filter_lt', 'filter_lteq'].map(
          (op) => `${op}[expires_at]`,
        ),
        ...[
          'filter',
          'filter_gt',
          'filter_gteq',
          'filter_lt',
          'filter_lteq',
          'filter_like',
          'filter_prefix',
        ].map((op) => `${op}[name]`),
        'filter[on]',
      ].sort(),
    )
    expect(q.required ?? []).toEqual([])
  })
})

describe.each(dialects)('Swagger document (%s)', (dialect) => {
  let doc: any
  const s = useServer(dialect)
  beforeAll(async () => {
    const r = await call(s, 'GET', '/swagger_doc')
    expect(r.status).toBe(200)
    doc = r.body
  })

  it('is served without credentials as Swagger 2.0 JSON, with the .json suffix too', async () => {
    expect(doc.swagger).toBe('2.0')
    expect(typeof doc.info.title).toBe('string')
    expect(typeof doc.info.version).toBe('string')
    expect(doc.basePath).toBe(API_PREFIX)
    const suffixed = await call(s, 'GET', '/swagger_doc.json')
    expect(suffixed.status).toBe(200)
    expect(suffixed.body).toEqual(doc)
    // Credentials, even wrong ones, change nothing: the document is public.
    const withBadKey = await call(s, 'GET', '/swagger_doc', { key: 'nope' })
    expect(withBadKey.status).toBe(200)
  })

  it('has route schemas that all compile (they are compiled on first use, not at start-up)', () => {
    // Whatever no request of this file used is compiled now: a broken schema fails here.
    expect(s.app.compileSchemas()).toBeGreaterThan(50)
    expect(s.app.compileSchemas()).toBe(0)
  })

  it('describes every API route Fastify serves, and nothing else', () => {
    const routes = fastifyRoutes(s).filter(
      (r) => r.url.startsWith(`${API_PREFIX}/`) && r.url !== `${API_PREFIX}/swagger_doc`,
    )
    expect(routes.length).toBeGreaterThanOrEqual(9)
    expect(routes).toContainEqual({ method: 'GET', url: `${API_PREFIX}/api_keys/:id` })
    const expected = routes.map((r) => `${r.method.toLowerCase()} ${toSwaggerPath(r.url)}`).sort()
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .flatMap(([p, ops]) =>
        Object.keys(ops)
          .filter((k) => METHODS.includes(k))
          .map((m) => `${m} ${p}`),
      )
      .sort()
    expect(documented).toEqual(expected)
  })

  it('validates structurally as Swagger 2.0', () => {
    const definitions = doc.definitions ?? {}
    for (const [name, schema] of Object.entries(definitions))
      checkSchema(schema, `definitions.${name}`, definitions)
    for (const [name, def] of Object.entries<any>(doc.securityDefinitions ?? {})) {
      expect(['basic', 'apiKey', 'oauth2'], name).toContain(def.type)
    }
    expect(Object.keys(doc.paths).length).toBeGreaterThan(0)
    for (const [p, ops] of Object.entries<Record<string, any>>(doc.paths)) {
      expect(p.startsWith('/'), p).toBe(true)
      expect(p, 'Express-style :params are not Swagger').not.toMatch(/:/)
      const templated = [...p.matchAll(/\{([^}]+)\}/g)].map((m) => m[1])
      for (const [method, op] of Object.entries<any>(ops)) {
        const where = `${method} ${p}`
        expect(METHODS, where).toContain(method)
        expect(typeof op.summary, `${where}: summary`).toBe('string')
        const params: any[] = op.parameters ?? []
        const seen = new Set<string>()
        for (const prm of params) {
          expect(typeof prm.name, where).toBe('string')
          expect(['query', 'header', 'path', 'formData', 'body'], `${where} ${prm.name}`).toContain(prm.in)
          const id = `${prm.in}:${prm.name}`
          expect(seen.has(id), `${where}: duplicate parameter ${id}`).toBe(false)
          seen.add(id)
          if (prm.in === 'body') {
            checkSchema(prm.schema, `${where} body`, definitions)
          } else {
            expect(PARAM_TYPES, `${where} ${prm.name}: type`).toContain(prm.type)
            if (prm.type === 'array') expect(prm.items, `${where} ${prm.name}`).toBeDefined()
          }
          if (prm.in === 'path') {
            expect(prm.required, `${where} ${prm.name}`).toBe(true)
            expect(templated, `${where}: path parameter ${prm.name} not in path`).toContain(prm.name)
          }
        }
        expect(params.filter((x) => x.in === 'body').length, where).toBeLessThanOrEqual(1)
        for (const t of templated) {
          expect(
            params.some((x) => x.in === 'path' && x.name === t),
            `${where}: {${t}} not declared`,
          ).toBe(true)
        }
        const codes = Object.keys(op.responses ?? {})
        expect(codes.length, `${where}: responses`).toBeGreaterThan(0)
        expect(
          codes.some((c) => /^2\d\d$/.test(c)),
          `${where}: a success response`,
        ).toBe(true)
        for (const [code, res] of Object.entries<any>(op.responses)) {
          expect(code === 'default' || /^[1-5]\d\d$/.test(code), `${where} ${code}`).toBe(true)
          expect(typeof res.description, `${where} ${code}: description`).toBe('string')
          if (res.schema !== undefined) checkSchema(res.schema, `${where} ${code}`, definitions)
          if (/^(200|201)$/.test(code)) expect(res.schema, `${where} ${code}: schema`).toBeDefined()
          if (code === '204') expect(res.schema, `${where} 204 has no body`).toBeUndefined()
        }
      }
    }
  })

  it('carries the parameters and response schemas of the API-key routes', () => {
    const list = doc.paths['/api_keys'].get
    const query = list.parameters.filter((p: any) => p.in === 'query').map((p: any) => p.name)
    expect(query).toEqual(expect.arrayContaining(['user_id', 'cursor', 'per_page', 'page']))
    expect(list.responses['200'].schema.type).toBe('array')
    const item = list.responses['200'].schema.items
    const apiKey = item.$ref ? doc.definitions[item.$ref.split('/').pop()] : item
    expect(Object.keys(apiKey.properties)).toEqual(
      expect.arrayContaining([
        'id',
        'descriptive_label',
        'created_at',
        'expires_at',
        'permission_set',
        'user_id',
        'url',
      ]),
    )
    expect(apiKey.properties.expires_at).toMatchObject({
      type: 'string',
      format: 'date-time',
      'x-nullable': true,
    })
    expect(apiKey.properties.user_id).toMatchObject({ type: 'integer', 'x-nullable': true })

    const show = doc.paths['/api_keys/{id}'].get
    expect(show.parameters).toContainEqual(
      expect.objectContaining({ in: 'path', name: 'id', type: 'integer', required: true }),
    )
    const create = doc.paths['/api_keys'].post
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '403', '422']))
    const body = create.parameters.find((p: any) => p.in === 'body')
    expect(Object.keys(body.schema.properties)).toEqual(
      expect.arrayContaining(['user_id', 'name', 'description', 'expires_at', 'permission_set', 'path']),
    )
    expect(doc.paths['/api_keys/{id}'].delete.responses['204']).toBeDefined()
  })

  it('describes the error body, model-error maps included', () => {
    const err = doc.paths['/api_keys'].post.responses['422'].schema
    expect(err.required.sort()).toEqual(['error', 'http-code', 'instance', 'title', 'type'])
    expect(err.properties['http-code'].type).toBe('integer')
    expect(err.properties.model_errors).toMatchObject({
      type: 'object',
      additionalProperties: { type: 'array', items: { type: 'string' } },
    })
    expect(err.properties.model_error_keys.additionalProperties.type).toBe('array')
  })

  it('lists 431 (headers too large, answered in the error body) on every operation', async () => {
    const ops = Object.values(doc.paths).flatMap((path: any) =>
      METHODS.filter((m) => path[m] !== undefined).map((m) => path[m]),
    )
    expect(ops.length).toBeGreaterThan(50)
    for (const op of ops) {
      expect(op.responses['431']?.schema, op.operationId ?? op.summary).toEqual(
        doc.paths['/api_keys'].post.responses['422'].schema,
      )
    }
    // …and the answer is that shape.
    const r = await fetch(`${s.api}/api_key`, { headers: { 'X-Padding': 'x'.repeat(17 * 1024) } })
    expect(r.status).toBe(431)
    const body = (await r.json()) as Record<string, unknown>
    const err = doc.paths['/api_key'].get.responses['431'].schema
    for (const field of err.required) expect(body[field], field).toBeDefined()
    expect(Object.keys(body).every((k) => k in err.properties)).toBe(true)
  })

  it('marks the routes that take no credentials', () => {
    expect(doc.paths['/sessions'].post.security).toEqual([])
    expect(doc.security).toEqual(expect.arrayContaining([{ api_key: [] }, { session: [] }]))
    expect(doc.paths['/api_keys'].get.security).toBeUndefined()
  })

  it('is valid Swagger 2.0 by a Swagger validator', async () => {
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeDefined()
  })

  it('matches the route schemas: every parameter, type, enum, format, pattern and required field', () => {
    const props = (schema: any) =>
      Object.entries<any>(schema?.properties ?? {}).filter(([, v]) => v.readOnly !== true)
    const typeOf = (t: unknown) => (Array.isArray(t) ? t.filter((x) => x !== 'null')[0] : t)
    const same = (where: string, route: any, documented: any) => {
      expect(documented, `${where} is documented`).toBeDefined()
      if (typeOf(route.type) !== undefined) expect(documented.type, `${where} type`).toBe(typeOf(route.type))
      for (const k of ['enum', 'format', 'pattern', 'minLength', 'maxLength', 'minimum', 'maximum'])
        expect(documented[k], `${where} ${k}`).toEqual(route[k])
      expect(documented['x-nullable'] === true, `${where} x-nullable`).toBe(
        Array.isArray(route.type) && route.type.includes('null'),
      )
    }
    let checked = 0
    for (const r of s.app.routeTable) {
      if (r.method === 'HEAD' || !r.url.startsWith(`${API_PREFIX}/`) || r.url.endsWith('/swagger_doc'))
        continue
      const schema = (r.schema ?? {}) as any
      const op = doc.paths[toSwaggerPath(r.url)]?.[r.method.toLowerCase()]
      expect(op, `${r.method} ${r.url}`).toBeDefined()
      const where = `${r.method} ${toSwaggerPath(r.url)}`
      const params: any[] = op.parameters ?? []
      for (const part of ['querystring', 'params', 'headers'] as const) {
        const inName = part === 'querystring' ? 'query' : part === 'params' ? 'path' : 'header'
        const required: string[] = schema[part]?.required ?? []
        for (const [name, rs] of props(schema[part])) {
          if (name === '*') continue
          const p = params.find((x) => x.in === inName && x.name === name)
          same(`${where} ${inName} ${name}`, rs, p)
          expect(p.required === true, `${where} ${name} required`).toBe(
            required.includes(name) || inName === 'path',
          )
          checked++
        }
        const documented = params.filter((x) => x.in === inName).map((x) => x.name)
        const declared = props(schema[part]).map(([n]) => n)
        if (inName !== 'path') expect(documented.sort(), `${where} ${inName}`).toEqual(declared.sort())
      }
      const body = params.find((x) => x.in === 'body')
      expect(Boolean(body), `${where} body`).toBe(Boolean(schema.body))
      if (schema.body) {
        const declared = props(schema.body)
        expect(Object.keys(body.schema.properties ?? {}).sort(), `${where} body fields`).toEqual(
          declared.map(([n]) => n).sort(),
        )
        for (const [name, rs] of declared) {
          same(`${where} body ${name}`, rs, body.schema.properties[name])
          checked++
        }
        expect((body.schema.required ?? []).sort(), `${where} body required`).toEqual(
          (schema.body.required ?? []).sort(),
        )
        expect(body.required === true, `${where} body required`).toBe((schema.body.required ?? []).length > 0)
      }
    }
    expect(checked).toBeGreaterThan(200)
  })

  it('says what the server takes: date-times, enums, integers, required fields, errors of binary routes', () => {
    const q = (path: string, name: string, method = 'get') =>
      doc.paths[path][method].parameters.find((p: any) => p.name === name)
    const body = (path: string, method = 'post') =>
      doc.paths[path][method].parameters.find((p: any) => p.in === 'body').schema
    expect(q('/history', 'start_at')).toMatchObject({ type: 'string', format: 'date-time' })
    expect(q('/history', 'start_at').description).toContain('a date alone means 00:00:00 UTC')
    expect(q('/users', 'filter[created_at]')).toMatchObject({ format: 'date-time' })
    expect(body('/history_exports').properties.start_at).toMatchObject({
      format: 'date-time',
      'x-nullable': true,
    })
    expect(body('/api_keys').properties.expires_at).toMatchObject({ format: 'date-time' })
    expect(q('/api_keys', 'sort_by[expires_at]').enum).toEqual(['asc', 'desc'])
    expect(q('/history', 'display').enum).toEqual(['', 'full', 'parent'])
    expect(body('/files/{path}').properties.action.enum).toEqual(['put', 'end'])
    expect(q('/users', 'filter[site_admin]').type).toBe('boolean')
    expect(body('/action_notification_exports').properties.query_success.type).toBe('boolean')
    expect(body('/permissions').properties.permission.enum).toContain('readonly')
    expect(body('/api_keys').properties.permission_set.enum).toContain('desktop_app')
    expect(q('/users', 'per_page')).toMatchObject({ type: 'integer', minimum: 1, maximum: 10000 })
    expect(q('/users', 'page').type).toBe('integer')
    expect(q('/history', 'filter[user_id]').type).toBe('integer')
    expect(body('/action_notification_exports').properties.query_status.pattern).toBeDefined()
    expect(body('/file_actions/copy/{path}').required).toEqual(['destination'])
    expect(body('/file_actions/move/{path}').required).toEqual(['destination'])
    expect(body('/users').required).toEqual(['username'])
    expect(body('/permissions').required).toEqual(['path'])
    expect(body('/permissions').properties.user_id.description).toContain('either user_id or username')
    expect(body('/resources/download').properties.id.description).toContain('either path or id')
    expect(body('/users').properties.password.minLength).toBe(8)
    expect(body('/users').properties.username.pattern).toBeDefined()
    expect(body('/users').properties.email.pattern).toBeDefined()
    expect(body('/permissions').properties.recursive.enum).toEqual([true])
    expect(body('/file_actions/copy/{path}').properties.destination).toMatchObject({ maxLength: 5000 })
    expect(body('/files/{path}').properties.part.maximum).toBe(10000)
    expect(Object.keys(body('/users/{id}', 'patch').properties)).not.toContain('created_at')
    expect(Object.keys(body('/api_keys/{id}', 'patch').properties)).not.toEqual(
      expect.arrayContaining(['key']),
    )
    expect(Object.keys(body('/api_keys/{id}', 'patch').properties)).not.toContain('url')
    expect(
      Object.keys(body('/history_exports').properties).filter((k) => /target|file_id|parent_id/.test(k)),
    ).toEqual([])
    expect(body('/api_keys/{id}', 'delete').properties.id.description).toContain(
      'Must equal the id in the path',
    )
    for (const [path, method] of [
      ['/export_files/{id}', 'get'],
      ['/billing_documents/{id}', 'get'],
      ['/downloads/{token}/{name}', 'get'],
      ['/resources/download', 'post'],
    ] as const) {
      expect(doc.paths[path][method].produces, path).toContain('application/json')
    }
    expect(body('/folders/{path}').properties.mkdir_parents['x-nullable']).toBe(true)
    expect(doc.paths['/sessions'].delete.security).toEqual([])
  })
})
