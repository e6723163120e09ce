import { describe, expect, it } from 'vitest'
import { IdentityCache } from '../src/identity/identity-cache.js'
import type { ApiKeyRow } from '../src/identity/principal.js'
import { call, dialects, makeKey, makeUser, useServer } from './helpers/server.js'

const row = (id: number) => ({ id }) as unknown as ApiKeyRow

describe('IdentityCache', () => {
  it('forgets an entry once its time is up', () => {
    const c = new IdentityCache(2000)
    c.set('h', row(1), null, 1000)
    expect(c.get('h', 2999)?.row.id).toBe(1)
    expect(c.get('h', 3000)).toBeUndefined()
  })

  it('keeps nothing when its time is 0', () => {
    const c = new IdentityCache(0)
    c.set('h', row(1), null, 1000)
    expect(c.get('h', 1000)).toBeUndefined()
  })

  it('drops the oldest entry when full, and everything on clear', () => {
    const c = new IdentityCache(60_000, 2)
    c.set('a', row(1), null, 0)
    c.set('b', row(2), null, 0)
    c.set('c', row(3), null, 0)
    expect(c.get('a', 1)).toBeUndefined()
    expect(c.get('c', 1)?.row.id).toBe(3)
    c.clear()
    expect(c.get('b', 1)).toBeUndefined()
  })
})

describe.each(dialects)('API keys reused from memory (%s)', (dialect) => {
  // The server's clock: real time plus an offset a test can move forward.
  let offset = 0
  const s = useServer(dialect, { AUTH_CACHE_SECONDS: '300' }, { now: () => Date.now() + offset })

  it('reads a busy key from the database once, not on every request', async () => {
    const user = await makeUser(s)
    const { id, key } = await makeKey(s, user.id, { name: 'before' })
    expect((await call(s, 'GET', '/api_key', { key })).body.name).toBe('before')
    // A change behind this process's back (another process, or SQL) is not seen within the TTL…
    await s.container.db.updateTable('api_keys').set({ name: 'behind' }).where('id', '=', id).execute()
    expect((await call(s, 'GET', '/api_key', { key })).body.name).toBe('before')
  })

  it('refuses a key at once when it is deleted through the API', async () => {
    const user = await makeUser(s)
    const { id, key } = await makeKey(s, user.id)
    expect((await call(s, 'GET', '/api_key', { key })).status).toBe(200)
    expect((await call(s, 'DELETE', `/api_keys/${id}`, { key: s.adminKey })).status).toBe(204)
    const r = await call(s, 'GET', '/api_key', { key })
    expect(r.status).toBe(401)
    expect(r.body.type).toBe('not-authenticated/authentication-required')
  })

  it('applies a new permission set at once when it is changed through the API', async () => {
    const user = await makeUser(s)
    const { id, key } = await makeKey(s, user.id)
    expect((await call(s, 'GET', '/api_keys', { key })).status).toBe(200)
    const patch = await call(s, 'PATCH', `/api_keys/${id}`, {
      key: s.adminKey,
      body: { permission_set: 'desktop_app' },
    })
    expect(patch.status).toBe(200)
    const r = await call(s, 'GET', '/api_keys', { key })
    expect(r.status).toBe(403)
    expect(r.body.type).toBe('not-authorized/api-key-only-for-desktop-app')
  })

  it('refuses the keys of a user at once when the user is disabled through the API', async () => {
    const user = await makeUser(s)
    const { key } = await makeKey(s, user.id)
    expect((await call(s, 'GET', '/api_key', { key })).status).toBe(200)
    const patch = await call(s, 'PATCH', `/users/${user.id}`, { key: s.adminKey, body: { disabled: true } })
    expect(patch.status).toBe(200)
    expect((await call(s, 'GET', '/api_key', { key })).status).toBe(401)
  })

  it('still checks expiry on every request', async () => {
    const user = await makeUser(s)
    const soon = new Date(Date.now() + 60_000).toISOString()
    const { key } = await makeKey(s, user.id, { expires_at: soon })
    expect((await call(s, 'GET', '/api_key', { key })).status).toBe(200)
    offset = 120_000
    try {
      const r = await call(s, 'GET', '/api_key', { key })
      expect(r.status).toBe(401)
      expect(r.body.type).toBe('not-authenticated/authentication-required')
    } finally {
      offset = 0
    }
  })
})
