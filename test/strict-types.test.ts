import { describe, expect, it } from 'vitest'
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  call,
  dialects,
  expectError,
  makeUser,
  useServer,
} from './helpers/server.js'

/** JSON values must have their schema's type; text (path, query, XML) converts only when exact. */
describe.each(dialects)('Strict input types (%s)', (dialect) => {
  const s = useServer(dialect)

  const invalid = (r: Awaited<ReturnType<typeof call>>, field: string) => {
    expectError(r, 400, 'bad-request/request-params-invalid')
    expect(r.body.error).toContain(field)
  }

  it('refuses a JSON list where a string is expected, naming the field', async () => {
    const r = await call(s, 'POST', '/sessions', {
      body: { username: [ADMIN_USERNAME], password: ADMIN_PASSWORD },
    })
    invalid(r, 'username')
    const list = await call(s, 'POST', '/history_exports', {
      key: s.adminKey,
      body: { start_at: ['2025-01-01'] },
    })
    invalid(list, 'start_at')
  })

  it('refuses a JSON boolean or number where a string is expected, and a string for a boolean', async () => {
    const u = await makeUser(s)
    invalid(await call(s, 'PATCH', `/users/${u.id}`, { key: s.adminKey, body: { name: true } }), 'name')
    invalid(await call(s, 'PATCH', `/users/${u.id}`, { key: s.adminKey, body: { name: 5 } }), 'name')
    invalid(
      await call(s, 'PATCH', `/users/${u.id}`, { key: s.adminKey, body: { disabled: 'true' } }),
      'disabled',
    )
    invalid(
      await call(s, 'POST', '/permissions', {
        key: s.adminKey,
        body: { path: 'a', user_id: String(u.id) },
      }),
      'user_id',
    )
    const shown = await call(s, 'GET', `/users/${u.id}`, { key: s.adminKey })
    expect(shown.body.name).toBeNull()
    expect(shown.body.disabled).toBe(false)
  })

  it('refuses ids in the path that are not plain decimal integers', async () => {
    const u = await makeUser(s)
    for (const id of ['0x10', '01', '1e3', '+1', ' 1', '-1']) {
      const r = await call(s, 'GET', `/users/${encodeURIComponent(id)}`, { key: s.adminKey })
      invalid(r, 'id')
    }
    expect((await call(s, 'GET', `/users/${u.id}`, { key: s.adminKey })).status).toBe(200)
  })

  it('converts query values strictly: decimal integers and true/false only', async () => {
    const u = await makeUser(s)
    for (const v of ['0x10', '01', '1e3', '-0x1']) {
      invalid(
        await call(s, 'GET', `/api_keys?user_id=${encodeURIComponent(v)}`, { key: s.adminKey }),
        'user_id',
      )
    }
    expect((await call(s, 'GET', `/api_keys?user_id=${u.id}`, { key: s.adminKey })).status).toBe(200)
    invalid(await call(s, 'GET', '/folders?search=a&search_all=yes', { key: s.adminKey }), 'search_all')
    invalid(await call(s, 'GET', '/folders?search=a&search_all=1', { key: s.adminKey }), 'search_all')
    expect((await call(s, 'GET', '/folders?search=a&search_all=true', { key: s.adminKey })).status).toBe(200)
    // A query key given twice is a list, not one value.
    invalid(await call(s, 'GET', `/api_keys?user_id=${u.id}&user_id=${u.id}`, { key: s.adminKey }), 'user_id')
  })

  it('converts query parameters merged into a body by the body schema', async () => {
    const u = await makeUser(s)
    const r = await call(s, 'POST', `/permissions?user_id=${u.id}&path=q`, { key: s.adminKey })
    expect(r.status).toBe(201)
    expect(r.body.user_id).toBe(u.id)
    const bad = await call(s, 'POST', `/permissions?user_id=0x${u.id.toString(16)}&path=q`, {
      key: s.adminKey,
    })
    invalid(bad, 'user_id')
    expect((await call(s, 'POST', '/folders/emptied', { key: s.adminKey })).status).toBe(201)
    const del = await call(s, 'DELETE', '/files/emptied?recursive=true', { key: s.adminKey })
    expect(del.status).toBe(204)
  })

  it('converts the text of XML bodies by the body schema, strictly', async () => {
    const u = await makeUser(s)
    const xml = (fields: string) =>
      call(s, 'POST', '/permissions', {
        key: s.adminKey,
        raw: `<permission>${fields}</permission>`,
        contentType: 'application/xml',
      })
    const ok = await xml(`<path>x</path><user_id>${u.id}</user_id><recursive>true</recursive>`)
    expect(ok.status).toBe(201)
    expect(ok.body.user_id).toBe(u.id)
    invalid(await xml(`<path>y</path><user_id>0${u.id}</user_id>`), 'user_id')
    invalid(await xml(`<path>y</path><user_id>${u.id}</user_id><recursive>yes</recursive>`), 'recursive')
    const patched = await call(s, 'PATCH', `/users/${u.id}`, {
      key: s.adminKey,
      raw: '<user><name>true</name><disabled type="boolean">true</disabled></user>',
      contentType: 'application/xml',
    })
    expect(patched.status).toBe(200)
    expect(patched.body).toMatchObject({ name: 'true', disabled: true })
  })
})
