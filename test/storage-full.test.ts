import { execFile } from 'node:child_process'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { type Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../src/app.js'
import type { BlobStore } from '../src/blobs/blob-store.js'
import { createLogger } from '../src/logger.js'
import { beginUpload, partUrl, putBytes, target, uploaded } from './helpers/files.js'
import { captureLog } from './helpers/log-capture.js'
import { call, dialects, useServer } from './helpers/server.js'
import { builtServer } from './helpers/server-process.js'

const BODY_FIELDS = ['error', 'http-code', 'instance', 'title', 'type']
// Long paths: their index entries need overflow pages, so writing them needs new pages, which a
// full SQLite database does not have (shorter rows might still fit in a page's free space).
const LONG = `${'d'.repeat(200)}/`.repeat(6)
const FOLDER = `full-db/${LONG}folder`
const KEPT = `full/${LONG}kept.txt`

/** The error a write to a full disk fails with. */
const enospc = () =>
  Object.assign(new Error('ENOSPC: no space left on device, write'), {
    code: 'ENOSPC',
    errno: -28,
    syscall: 'write',
  })

/**
 * The real blob store on a disk that can fill up: while `full`, the bytes of a write reach the
 * store's own pipeline and fail there with ENOSPC, as a write to a full file system does.
 */
function fillableDisk(state: { full: boolean }) {
  return (store: BlobStore): BlobStore => {
    const choke = (data: Readable): Readable => {
      if (!state.full) return data
      const failing = new Transform({ transform: (_chunk, _enc, cb) => cb(enospc()) })
      void pipeline(data, failing).catch(() => undefined)
      return failing
    }
    return new Proxy(store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver)
        if (prop === 'putPart') {
          return (ref: string, n: number, data: Readable, o?: { maxBytes?: number }) =>
            target.putPart(ref, n, choke(data), o)
        }
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
  }
}

describe.each(dialects)('a full disk (%s)', (dialect) => {
  let app: FastifyInstance
  let api: string
  const disk = { full: false }
  const log = captureLog()

  const s = useServer(dialect, {}, { wrapBlobStore: fillableDisk(disk) })
  beforeAll(async () => {
    // A second front end on the same container, logging as `wharf serve` does.
    app = await buildApp(s.container, { logger: createLogger('info', log.stream) })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const addr = app.server.address()
    api = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/api/rest/v1`
  })
  afterAll(async () => {
    // The refused part's client may still be sending: its connection is not idle, only over.
    const closing = app?.close()
    app?.server.closeAllConnections()
    await closing
  })

  /** Fills the database for real: SQLite up to a page limit, PostgreSQL refusing as on a full disk. */
  async function fillDatabase() {
    const { database } = s.container
    if (database.sqlite) {
      await database.sqlite.hold((db) => {
        db.exec('create table if not exists filler (x blob)')
        const pages = db.pragma('page_count', { simple: true }) as number
        db.pragma(`max_page_count = ${pages}`)
        const fill = db.prepare('insert into filler values (randomblob(1000))')
        for (;;) {
          try {
            fill.run()
          } catch (err) {
            expect((err as { code?: string }).code).toBe('SQLITE_FULL')
            return
          }
        }
      })
    } else {
      await sql`create or replace function wharf_disk_full() returns trigger language plpgsql as $$
        begin raise exception 'could not extend file: No space left on device' using errcode = 'disk_full'; end $$`.execute(
        s.container.db,
      )
      for (const table of ['actions', 'files']) {
        await sql`create trigger disk_full before insert on ${sql.table(table)} for each row execute function wharf_disk_full()`.execute(
          s.container.db,
        )
      }
    }
  }
  async function freeDatabase() {
    const { database } = s.container
    if (database.sqlite) {
      await database.sqlite.hold((db) => {
        db.pragma('max_page_count = 1073741823')
        db.exec('drop table if exists filler')
      })
    } else {
      for (const table of ['actions', 'files']) {
        await sql`drop trigger if exists disk_full on ${sql.table(table)}`.execute(s.container.db)
      }
    }
  }
  const since = () => log.lines.length
  const loggedSince = (from: number) => log.lines.slice(from).map((l) => JSON.parse(l) as Record<string, any>)

  it('answers a part upload to a full disk 507 storage-full and logs ENOSPC once', async () => {
    const t = { ...target(s), api }
    const first = await beginUpload(t, 'full/part.bin')
    const uri = (await partUrl(t, 'full/part.bin', first.ref, 1)).upload_uri.replace(s.api, api)
    const from = since()
    disk.full = true
    let r: Awaited<ReturnType<typeof putBytes>>
    try {
      r = await putBytes(uri, Buffer.alloc(4 * 1024 * 1024, 1))
    } finally {
      disk.full = false
    }
    expect(r.status).toBe(507)
    const body = JSON.parse(r.text)
    expect(Object.keys(body).sort()).toEqual(BODY_FIELDS)
    expect(body).toMatchObject({ 'http-code': 507, type: 'service-unavailable/storage-full' })
    expect(body.error).toMatch(/storage is full/)
    const errors = loggedSince(from).filter((l) => l.level === 50)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatchObject({ code: 'ENOSPC', instance: body.instance })
    // Space again: the same part goes through.
    expect((await putBytes(uri, Buffer.alloc(1024, 2))).status).toBe(200)
  })

  it('answers a write to a full database 507 storage-full, logging the database error itself', async () => {
    const from = since()
    try {
      await fillDatabase()
      // Within the test's time limit, so that a request that never ends fails here, saying what the
      // server logged, and the database is freed for the next test.
      const r = await fetch(`${api}/folders/${encodeURIComponent(FOLDER)}?mkdir_parents=true`, {
        method: 'POST',
        headers: { 'X-ServiceAPI-Key': s.adminKey },
        signal: AbortSignal.timeout(20_000),
      }).catch((err) => {
        const logged = log.lines.slice(from).join('\n')
        throw new Error(`${(err as Error).message}; the server logged: ${logged}`, { cause: err })
      })
      const body = (await r.json()) as Record<string, any>
      expect(r.status, JSON.stringify(body)).toBe(507)
      expect(Object.keys(body).sort()).toEqual(BODY_FIELDS)
      expect(body.type).toBe('service-unavailable/storage-full')
      const errors = loggedSince(from).filter((l) => l.level === 50)
      expect(errors).toHaveLength(1)
      expect(errors[0]!['code']).toBe(dialect === 'sqlite' ? 'SQLITE_FULL' : '53100')
      expect(JSON.stringify(errors[0])).not.toContain('cannot rollback')
    } finally {
      await freeDatabase()
    }
    const again = await call(s, 'POST', `/folders/${encodeURIComponent(FOLDER)}?mkdir_parents=true`, {
      key: s.adminKey,
    })
    expect(again.status).toBe(201)
  })

  it('serves a download while the database is full and records its read once there is room', async () => {
    await uploaded(s, KEPT, 'kept bytes')
    const reads = async () =>
      (
        await s.container.db
          .selectFrom('actions')
          .select('id')
          .where('action', '=', 'read')
          .where('path', '=', KEPT)
          .execute()
      ).length
    const link = async () =>
      (
        (await call(s, 'GET', `/files/${encodeURIComponent(KEPT)}`, { key: s.adminKey })).body
          .download_uri as string
      ).replace(s.api, api)
    const uri = await link()
    try {
      await fillDatabase()
      const r = await fetch(uri, { signal: AbortSignal.timeout(20_000) })
      expect(r.status).toBe(200)
      expect(await r.text()).toBe('kept bytes')
      expect(s.container.services.downloads.heldReads.size).toBe(1)
    } finally {
      await freeDatabase()
    }
    expect(await reads()).toBe(0)
    // The next download writes the held read first, then its own.
    const r = await fetch(await link())
    expect(await r.text()).toBe('kept bytes')
    expect(await reads()).toBe(2)
    expect(s.container.services.downloads.heldReads.size).toBe(0)
  })
})

describe('start-up on a full disk', () => {
  it('says the storage is full and exits 1, without a stack trace', async () => {
    const cli = builtServer()
    const dataDir = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-full-')), 'data')
    // A file system with no room: creating DATA_DIR fails with ENOSPC, as it would on a full disk.
    const preload = path.join(path.dirname(dataDir), 'full-disk.mjs')
    await fs.writeFile(
      preload,
      `import fs from 'node:fs'
const mkdirSync = fs.mkdirSync
fs.mkdirSync = (p, o) => {
  if (String(p).startsWith(${JSON.stringify(dataDir)})) {
    throw Object.assign(new Error('ENOSPC: no space left on device, mkdir ' + p), { code: 'ENOSPC', errno: -28, syscall: 'mkdir' })
  }
  return mkdirSync(p, o)
}
`,
    )
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', preload, cli, 'serve'],
        {
          env: {
            ...process.env,
            DATA_DIR: dataDir,
            PORT: '0',
            BASE_URL: 'http://127.0.0.1:1',
            LOG_LEVEL: 'silent',
            DATABASE_URL: '',
          },
        },
        (err, _stdout, stderr) =>
          resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr }),
      )
    })
    await fs.rm(path.dirname(dataDir), { recursive: true, force: true })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('storage is full')
    expect(result.stderr).toContain('ENOSPC')
    expect(result.stderr).not.toMatch(/^\s+at /m)
  })
})
