import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { BlobStore } from '../src/blobs/blob-store.js'
import { dialects, startServer, useServer } from './helpers/server.js'
import { serverProcesses } from './helpers/server-process.js'

const READY = { database: 'ok', blob_store: 'ok', webhooks: 'ok', exports: 'ok', checksums: 'ok' }

describe.each(dialects)('health and readiness (%s)', (dialect) => {
  let failing = false
  const s = useServer(
    dialect,
    {},
    {
      // A store that can be told to fail, as an unreachable bucket would.
      wrapBlobStore: (store: BlobStore) =>
        new Proxy(store, {
          get(target, key, receiver) {
            if (key === 'size')
              return async (k: string) => {
                if (failing) throw new Error('connect ECONNREFUSED 127.0.0.1:9')
                return target.size(k)
              }
            const value = Reflect.get(target, key, receiver)
            return typeof value === 'function' ? value.bind(target) : value
          },
        }),
    },
  )

  it('answers /healthz and /readyz without credentials, not cached', async () => {
    const health = await fetch(`${s.url}/healthz`)
    expect(health.status).toBe(200)
    expect(health.headers.get('cache-control')).toBe('no-store')
    expect(await health.json()).toEqual({ status: 'ok' })
    const ready = await fetch(`${s.url}/readyz`)
    expect(ready.status).toBe(200)
    expect(await ready.json()).toEqual({ status: 'ready', checks: READY })
  })

  it('is not ready, saying which part, while an outbox worker is stopped or the store fails', async () => {
    await s.container.webhooks.dispatcher.stop()
    try {
      const r = await fetch(`${s.url}/readyz`)
      expect(r.status).toBe(503)
      expect(await r.json()).toEqual({ status: 'not ready', checks: { ...READY, webhooks: 'not running' } })
    } finally {
      await s.container.webhooks.dispatcher.start()
    }
    failing = true
    try {
      const r = await fetch(`${s.url}/readyz`)
      expect(r.status).toBe(503)
      expect(await r.json()).toEqual({
        status: 'not ready',
        checks: { ...READY, blob_store: 'connect ECONNREFUSED 127.0.0.1:9' },
      })
      // The process is still up.
      expect((await fetch(`${s.url}/healthz`)).status).toBe(200)
    } finally {
      failing = false
    }
    expect((await fetch(`${s.url}/readyz`)).status).toBe(200)
  })

  it('is not ready once the database is gone', async () => {
    const t = await startServer(dialect)
    try {
      await t.container.database.close()
      const r = await fetch(`${t.url}/readyz`)
      expect(r.status).toBe(503)
      const body = (await r.json()) as { checks: Record<string, string> }
      expect(body.checks['database']).not.toBe('ok')
    } finally {
      await t.app.close()
    }
  })
})

describe('readiness of a started server', () => {
  const servers = serverProcesses()
  afterAll(() => servers.killAll())

  it('counts every enabled front end: ready once the "Wharf is listening" line is out', async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-ready-'))
    try {
      const server = await servers.serve({
        DATA_DIR: dataDir,
        PATH: process.env['PATH'],
        ADMIN_PASSWORD: 'admin-password-1',
        SFTP_ENABLED: 'true',
      })
      const base = server.api.replace('/api/rest/v1', '')
      const r = await fetch(`${base}/readyz`)
      expect(await r.json()).toEqual({ status: 'ready', checks: { ...READY, http: 'ok', sftp: 'ok' } })
      expect(r.status).toBe(200)
      server.child.kill('SIGTERM')
      await server.exited
    } finally {
      await fs.rm(dataDir, { recursive: true, force: true })
    }
  })
})
