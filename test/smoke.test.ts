import { describe, expect, it } from 'vitest'
import { call, dialects, useServer } from './helpers/server.js'

describe.each(dialects)('smoke (%s)', (dialect) => {
  const s = useServer(dialect)

  it('answers GET /api_key with the key of the request', async () => {
    const r = await call(s, 'GET', '/api_key', { key: s.adminKey })
    expect(r.status).toBe(200)
    expect(r.body.permission_set).toBe('full')
    expect(r.body.user_id).toBeNull()
    expect(r.body.key).toBeUndefined()
  })
})
