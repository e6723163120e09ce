import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import type { Logger } from 'pino'
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest'
import { buildApp } from '../../src/app.js'
import type { BlobStore } from '../../src/blobs/blob-store.js'
import { bindPorts } from '../../src/cli/bound-ports.js'
import { loadConfig } from '../../src/config.js'
import { type Container, createContainer } from '../../src/container.js'
import type { ExportKind } from '../../src/db/schema.js'
import type { ExportSource } from '../../src/exports/export-kind.js'
import { httpFrontEnd } from '../../src/http/http-front-end.js'
import { operatorPrincipal } from '../../src/identity/principal.js'
import { hashPassword } from '../../src/security/secrets.js'
import type { Resolver } from '../../src/webhooks/address-guard.js'

export type DialectName = 'sqlite' | 'postgres'

/** SQLite always; PostgreSQL when TEST_DATABASE_URL is set (CI sets it). */
export const dialects: DialectName[] = process.env['TEST_DATABASE_URL'] ? ['sqlite', 'postgres'] : ['sqlite']

export const ADMIN_USERNAME = 'admin'
export const ADMIN_PASSWORD = 'admin-password-1'

export interface TestServer {
  dialect: DialectName
  url: string
  /** `${url}/api/rest/v1` */
  api: string
  app: FastifyInstance
  container: Container
  /** A site-wide API key (full permissions). */
  adminKey: string
  /** The PostgreSQL schema of its database (none on SQLite). */
  schema?: string | undefined
  close(): Promise<void>
}

/** What a test server is built with beside its environment. */
export interface ServerOptions {
  now?: () => number
  resolver?: Resolver
  /** Where exports read their records, by kind (a failing or slow fake). */
  exportSources?: Partial<Record<ExportKind, ExportSource>>
  /** Wraps the blob store (a disk that fills up). */
  wrapBlobStore?: (store: BlobStore) => BlobStore
  /** Bytes per upload part of a protocol writer (small: several parts staged at once). */
  writerPartBytes?: number
  /** The HTTP server's logger (none by default). */
  logger?: Logger
}

/** A value, or a function that gives it when the server starts (after the file's own set-up). */
export type Deferred<T> = T | (() => T)

/** The value of a Deferred, taken now. */
export const settle = <T>(value: Deferred<T>): T =>
  typeof value === 'function' ? (value as () => T)() : value

/**
 * The server of a `describe` block: started before its first test and closed after its last, by
 * hooks this registers itself, so a test file never writes its own start and close. The handle is
 * the TestServer once it is up; touching it earlier (while tests are collected) throws. Hooks the
 * block registers afterwards run while the server is up: `beforeAll` after the start, `afterAll`
 * before the close. Use `startServer` where a test needs the server's life in its own hands.
 */
export function useServer(
  dialect: DialectName,
  env: Deferred<Record<string, string>> = {},
  opts: Deferred<ServerOptions> = {},
): TestServer {
  return serverFor(beforeAll, afterAll, dialect, env, opts)
}

/** As useServer, with a fresh server for every test (one a test may crash or leave in a mess). */
export function useServerEach(
  dialect: DialectName,
  env: Deferred<Record<string, string>> = {},
  opts: Deferred<ServerOptions> = {},
): TestServer {
  return serverFor(beforeEach, afterEach, dialect, env, opts)
}

function serverFor(
  before: typeof beforeAll,
  after: typeof afterAll,
  dialect: DialectName,
  env: Deferred<Record<string, string>>,
  opts: Deferred<ServerOptions>,
): TestServer {
  return usedFor(before, after, `${dialect} test server`, () =>
    startServer(dialect, settle(env), settle(opts)),
  )
}

/**
 * For tests that each start servers of their own, with settings (or a clock) only the test knows:
 * the function this returns starts one, and every server a test started is closed after that
 * test, by a hook this registers (an `afterEach` registered later runs before the close).
 */
export function useServersPerTest(
  dialect: DialectName,
): (env?: Record<string, string>, opts?: ServerOptions) => Promise<TestServer> {
  const started: TestServer[] = []
  afterEach(async () => {
    for (const s of started.splice(0)) await s.close()
  })
  return async (env = {}, opts = {}) => {
    const s = await startServer(dialect, env, opts)
    started.push(s)
    return s
  }
}

/** Something a test file starts and closes: a server with more beside it (SFTP, FTP, a listener). */
export interface Closable {
  close(): Promise<void>
}

/**
 * As useServer, for whatever `start` starts: up before the block's first test, closed after its
 * last, through hooks this registers. `start` runs in the hook, so it may read what the file set
 * up before. Other helpers build on it (an SFTP or FTP server, a world of records around one).
 */
export function useStarted<T extends Closable>(what: string, start: () => Promise<T>): T {
  return usedFor(beforeAll, afterAll, what, start)
}

/** As useStarted, with a fresh one for every test. */
export function useStartedEach<T extends Closable>(what: string, start: () => Promise<T>): T {
  return usedFor(beforeEach, afterEach, what, start)
}

function usedFor<T extends Closable>(
  before: typeof beforeAll,
  after: typeof afterAll,
  what: string,
  start: () => Promise<T>,
): T {
  let started: T | null = null
  before(async () => {
    started = await start()
  })
  after(async () => {
    const up = started
    started = null
    await up?.close()
  })
  return new Proxy({} as T, {
    get(_target, key) {
      // Not a promise: `await` and vitest's printing look for `then` on anything.
      if (key === 'then') return undefined
      if (!started) throw new Error(`The ${what} is not up: use it in a test or a later hook`)
      const value = Reflect.get(started, key)
      // A method runs on the object itself (a class's private fields are not seen through a proxy).
      return typeof value === 'function' ? value.bind(started) : value
    },
  })
}

/**
 * A real Wharf server on a real port, with its own database: a temporary SQLite folder, or a
 * fresh PostgreSQL schema that is dropped afterwards. Limits are generous unless `env` says so.
 */
export async function startServer(
  dialect: DialectName,
  env: Record<string, string> = {},
  opts: ServerOptions = {},
): Promise<TestServer> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-test-'))
  const schema = dialect === 'postgres' ? `t_${crypto.randomBytes(6).toString('hex')}` : undefined
  const config = loadConfig({
    DATA_DIR: dataDir,
    ADMIN_USERNAME,
    ADMIN_PASSWORD,
    PORT: '0',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PER_SECOND: '100000',
    RATE_LIMIT_BURST: '100000',
    LOGIN_DEFENDER_THRESHOLD: '100000',
    // Tests change keys and users straight in the database, as another process would: no reuse.
    AUTH_CACHE_SECONDS: '0',
    // Checksums queued by another worker (or left by a stopped one) are found within a moment.
    CHECKSUM_POLL_MS: '100',
    ...(dialect === 'postgres' ? { DATABASE_URL: process.env['TEST_DATABASE_URL']! } : {}),
    ...env,
  })
  const container = await createContainer(config, {
    ...(schema ? { databaseSchema: schema } : {}),
    ...(opts.now ? { now: opts.now } : {}),
    ...(opts.resolver ? { resolver: opts.resolver } : {}),
    ...(opts.exportSources ? { exportSources: opts.exportSources } : {}),
    ...(opts.wrapBlobStore ? { wrapBlobStore: opts.wrapBlobStore } : {}),
    ...(opts.writerPartBytes ? { writerPartBytes: opts.writerPartBytes } : {}),
  })
  const app = await buildApp(container, opts.logger ? { logger: opts.logger } : {})
  // Bound and handed over as `wharf serve` does, on a free loopback port.
  const http = httpFrontEnd(app, {
    host: '127.0.0.1',
    port: 0,
    url: () => container.config.baseUrl,
    database: container.database.dialect.name,
    dataDir,
    davPrefix: config.dav.enabled ? config.dav.prefix : null,
  })
  const [httpPort] = await bindPorts([http.port])
  await http.start((server) => httpPort!.handTo(server))
  // Webhooks go out, exports are built and checksums computed as in production; the janitor and
  // the retention jobs run only when a test asks.
  await container.webhooks.dispatcher.start()
  await container.exports.worker.start()
  await container.checksums.start()
  // With SMTP_URL, queued mail goes out as in production.
  await container.mail.worker?.start()
  const url = `http://127.0.0.1:${http.address().port}`
  container.config.baseUrl = url
  const created = await container.services.apiKeys.create(operatorPrincipal(container.site.id), {
    site_wide: true,
    name: 'test admin key',
  })
  return {
    dialect,
    url,
    api: `${url}/api/rest/v1`,
    app,
    container,
    adminKey: created.key!,
    schema,
    async close() {
      // As `wharf serve` does on SIGTERM.
      await http.close()
      await container.close()
      await fs.rm(dataDir, { recursive: true, force: true })
      if (schema) {
        const c = new pg.Client({ connectionString: process.env['TEST_DATABASE_URL'] })
        await c.connect()
        try {
          await c.query(`drop schema if exists ${schema} cascade`)
        } finally {
          await c.end()
        }
      }
    },
  }
}

export interface TestUser {
  id: number
  username: string
  password: string
}

/**
 * One hash per password for factory users: scrypt is slow on purpose (a tenth of a second or
 * more), and tests that make hundreds of users spent most of their time in it. A salt of its own
 * per factory user proves nothing a test checks; users made through the API still get one.
 */
const factoryHashes = new Map<string, Promise<string>>()

function factoryHash(password: string): Promise<string> {
  let hash = factoryHashes.get(password)
  if (!hash) {
    hash = hashPassword(password)
    factoryHashes.set(password, hash)
  }
  return hash
}

/** Factory: a user row straight in the database (not through the API under test). */
export async function makeUser(
  s: TestServer,
  overrides: Partial<{
    username: string
    password: string
    site_admin: boolean
    self_managed: boolean
    email: string
  }> = {},
): Promise<TestUser> {
  const username = overrides.username ?? `user-${crypto.randomBytes(4).toString('hex')}`
  const password = overrides.password ?? 'user-password-1'
  const now = Date.now()
  const row = await s.container.db
    .insertInto('users')
    .values({
      site_id: s.container.site.id,
      username,
      username_lower: username.toLowerCase(),
      password_hash: await factoryHash(password),
      name: null,
      email: overrides.email ?? null,
      site_admin: overrides.site_admin ? 1 : 0,
      self_managed: overrides.self_managed === false ? 0 : 1,
      disabled: 0,
      created_at: now,
      updated_at: now,
      last_login_at: null,
      password_set_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  return { id: row.id, username, password }
}

/** Factory: a key for a user (or site-wide), created through the service; returns the plain key. */
/** The id of the site administrator created at first start. */
export async function adminUserId(s: TestServer): Promise<number> {
  const admin = await s.container.db
    .selectFrom('users')
    .select('id')
    .where('username', '=', ADMIN_USERNAME)
    .executeTakeFirstOrThrow()
  return admin.id
}

export async function makeKey(
  s: TestServer,
  userId: number | null,
  input: { permission_set?: string; path?: string; expires_at?: string; name?: string } = {},
): Promise<{ id: number; key: string }> {
  const k = await s.container.services.apiKeys.create(operatorPrincipal(s.container.site.id), {
    ...(userId === null ? { site_wide: true } : { user_id: userId }),
    ...input,
  })
  return { id: k.id, key: k.key! }
}

/** Factory: a folder permission for a user, granted through the service as the operator. */
export async function grant(s: TestServer, userId: number, path: string, permission: string): Promise<void> {
  await s.container.services.permissions.create(operatorPrincipal(s.container.site.id), {
    path,
    user_id: userId,
    permission,
  })
}

export interface CallOptions {
  key?: string
  session?: string
  body?: unknown
  /** Raw body text (sent as is); pair with contentType. */
  raw?: string
  contentType?: string
  headers?: Record<string, string>
  accept?: string
}

export interface CallResult {
  status: number
  headers: Headers
  text: string
  /** Parsed JSON when the response is JSON, else undefined. */
  body: any
}

/** One HTTP request to the test server; `path` is relative to /api/rest/v1. */
export async function call(
  s: TestServer,
  method: string,
  p: string,
  o: CallOptions = {},
): Promise<CallResult> {
  const headers: Record<string, string> = { ...(o.headers ?? {}) }
  if (o.key) headers['X-ServiceAPI-Key'] = o.key
  if (o.session) headers['X-ServiceAPI-Auth'] = o.session
  if (o.accept) headers['Accept'] = o.accept
  let body: string | undefined
  if (o.raw !== undefined) {
    body = o.raw
    headers['Content-Type'] = o.contentType ?? 'application/json'
  } else if (o.body !== undefined) {
    body = JSON.stringify(o.body)
    headers['Content-Type'] = 'application/json'
  }
  const res = await fetch(`${s.api}${p}`, { method, headers, ...(body !== undefined ? { body } : {}) })
  const text = await res.text()
  let parsed: any
  if ((res.headers.get('content-type') ?? '').includes('json') && text !== '') parsed = JSON.parse(text)
  return { status: res.status, headers: res.headers, text, body: parsed }
}

/** Logs in through the API and returns the session id. */
export async function login(s: TestServer, username: string, password: string): Promise<string> {
  const r = await call(s, 'POST', '/sessions', { body: { username, password } })
  if (r.status !== 201) throw new Error(`login failed: ${r.status} ${r.text}`)
  return r.body.id as string
}

/** An API error with exactly this status and type, in the spec's error body. */
export function expectError(r: CallResult, status: number, type: string): void {
  expect({ status: r.status, type: r.body?.type }).toEqual({ status, type })
  expect(r.body['http-code']).toBe(status)
  expect(typeof r.body.instance).toBe('string')
}
