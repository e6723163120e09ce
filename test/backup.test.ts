import { execFile } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { text } from 'node:stream/consumers'
import { promisify } from 'node:util'
import pg from 'pg'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { BackupError, MANIFEST, OBJECTS, SQLITE_FILE, SUMS } from '../src/cli/backup-files.js'
import { verifyBlobs } from '../src/cli/blob-verify.js'
import { backupSite } from '../src/cli/site-backup.js'
import { restoreSite } from '../src/cli/site-restore.js'
import { loadConfig } from '../src/config.js'
import { type Container, createContainer } from '../src/container.js'
import { req, target, uploaded, withChecksums } from './helpers/files.js'
import { S3_CREDENTIALS, startS3Server } from './helpers/s3-server.js'
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  type DialectName,
  dialects,
  startServer,
  type TestServer,
} from './helpers/server.js'
import { builtServer } from './helpers/server-process.js'
import { startWebhookRecorder, type WebhookRecorder } from './helpers/webhook-recorder.js'

const run = promisify(execFile)
const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.()
})

const tmp = async (name: string) => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), `wharf-${name}-`))
  cleanups.push(() => fs.rm(dir, { recursive: true, force: true }))
  return dir
}

async function server(dialect: DialectName, env: Record<string, string> = {}): Promise<TestServer> {
  const s = await startServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', ...env })
  cleanups.push(() => s.close())
  return s
}

const schemaOf = (s: TestServer) => s.schema

/** A new empty PostgreSQL database to restore into (the dump names its schema, as the original's). */
async function emptyDatabase(): Promise<string> {
  const base = process.env['TEST_DATABASE_URL']!
  const name = `wharf_restore_${crypto.randomBytes(5).toString('hex')}`
  const admin = new pg.Client({ connectionString: base })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  cleanups.push(async () => {
    const c = new pg.Client({ connectionString: base })
    await c.connect()
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await c.end()
  })
  const url = new URL(base)
  url.pathname = `/${name}`
  return url.toString()
}

/** The settings of an empty site: a new DATA_DIR, and on PostgreSQL a new database. */
async function emptySite(dialect: DialectName) {
  const env: Record<string, string> = { DATA_DIR: await tmp('restored'), ADMIN_USERNAME, ADMIN_PASSWORD }
  if (dialect === 'postgres') env['DATABASE_URL'] = await emptyDatabase()
  return Object.assign(loadConfig(env), { env })
}

async function open(config: ReturnType<typeof loadConfig>, schema: string | undefined): Promise<Container> {
  const c = await createContainer(config, schema ? { databaseSchema: schema } : {})
  cleanups.push(() => c.close())
  return c
}

const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex')

async function blobBytes(c: Container, key: string): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of await c.blobs.open(key)) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/** Rows of a table by id, with the columns named (those that do not change once written). */
async function rows(c: Container, table: string, columns: string[]): Promise<Record<string, unknown>[]> {
  return (await c.db
    .selectFrom(table as 'users')
    .select(columns as 'id'[])
    .orderBy('id')
    .execute()) as Record<string, unknown>[]
}

const USER_COLUMNS = [
  'id',
  'username',
  'password_hash',
  'name',
  'email',
  'site_admin',
  'disabled',
  'created_at',
]
const KEY_COLUMNS = [
  'id',
  'user_id',
  'key_hash',
  'name',
  'permission_set',
  'path',
  'expires_at',
  'created_at',
]
const PERMISSION_COLUMNS = ['id', 'user_id', 'path', 'permission', 'created_at']
const ACTION_COLUMNS = ['id', 'action', 'path', 'user_id', 'interface', 'created_at']
const NOTIFICATION_COLUMNS = ['id', 'message_id', 'operation', 'path', 'protocol', 'created_at']
const ATTEMPT_COLUMNS = [
  'id',
  'notification_id',
  'attempt',
  'status',
  'request_body',
  'request_url',
  'created_at',
]

describe.each(dialects)('backup, restore and verify (%s)', (dialect) => {
  it('backs up a site under load and restores it elsewhere with every file, user, key, permission, action and log record', async () => {
    const recorder: WebhookRecorder = await startWebhookRecorder(() => ({ status: 200 }))
    cleanups.push(() => recorder.close())
    const s = await server(dialect)
    const t = target(s)
    expect(
      (await req(t, 'PATCH', '/webhook_settings', { url: recorder.url, triggers: ['Upload'], enabled: true }))
        .status,
    ).toBe(200)
    const user = await req(t, 'POST', '/users', { username: 'partner', password: 'partner-password-1' })
    expect(user.status, user.text).toBe(201)
    const key = await req(t, 'POST', '/api_keys', { user_id: user.body.id, name: 'partner key' })
    expect(key.status, key.text).toBe(201)
    expect(
      (await req(t, 'POST', '/permissions', { user_id: user.body.id, path: 'in', permission: 'full' }))
        .status,
    ).toBe(201)
    const before = new Map<string, Buffer>()
    for (let i = 0; i < 12; i++) {
      // Sizes across a part boundary too: a blob of several parts is a folder on disk.
      const bytes = crypto.randomBytes(i === 0 ? s.container.config.files.partSize + 1000 : 1000 + i * 777)
      await uploaded(s, `in/file-${i}.bin`, bytes)
      before.set(`in/file-${i}.bin`, bytes)
    }
    await recorder.waitFor(12, 20_000)

    // Load while the backup runs: uploads (with their actions and deliveries) and downloads.
    let load = true
    const written: string[] = []
    const loader = (async () => {
      for (let i = 0; load; i++) {
        await uploaded(s, `in/load-${i}.bin`, crypto.randomBytes(2000 + i))
        written.push(`in/load-${i}.bin`)
        await req(t, 'GET', `/files/in%2Ffile-${i % 12}.bin`)
      }
    })()
    await vi.waitFor(() => expect(written.length).toBeGreaterThan(2), { timeout: 20_000 })
    const dir = path.join(await tmp('backup'), 'site')
    const { manifest } = await backupSite({ config: s.container.config, databaseSchema: schemaOf(s) }, dir)
    await vi.waitFor(() => expect(written.length).toBeGreaterThan(manifest.blobs.count - 12 + 2), {
      timeout: 20_000,
    })
    load = false
    await loader

    expect(manifest.database.dialect).toBe(dialect)
    expect(manifest.blobs.missing).toEqual([])
    expect(manifest.blobs.count).toBeGreaterThanOrEqual(12)
    const sums = await fs.readFile(path.join(dir, SUMS), 'utf8')
    expect(sums).toMatch(
      dialect === 'sqlite' ? /^[0-9a-f]{64} {2}wharf\.sqlite$/m : /^[0-9a-f]{64} {2}database\.dump$/m,
    )

    const config = await emptySite(dialect)
    const report = await restoreSite({ config, databaseSchema: schemaOf(s) }, dir)
    expect(report.restoredBlobs).toBe(manifest.blobs.count)
    const restored = await open(config, schemaOf(s))
    const original = s.container

    // Every file of the backup, byte for byte as the original holds it; those written before it all.
    const files = await restored.db
      .selectFrom('files')
      .select(['path', 'blob_key', 'size'])
      .where('type', '=', 'file')
      .execute()
    expect(files.length).toBe(manifest.blobs.count)
    for (const p of before.keys()) expect(files.map((f) => f.path)).toContain(p)
    for (const f of files) {
      const live = await original.db
        .selectFrom('files')
        .select('blob_key')
        .where('path', '=', f.path)
        .executeTakeFirstOrThrow()
      const bytes = await blobBytes(restored, f.blob_key as string)
      expect(bytes.length).toBe(f.size)
      expect(sha(bytes)).toBe(sha(await blobBytes(original, live.blob_key as string)))
      if (before.has(f.path)) expect(sha(bytes)).toBe(sha(before.get(f.path)!))
    }
    // Users, keys and permissions did not change under the load: the same rows.
    expect(await rows(restored, 'users', USER_COLUMNS)).toEqual(await rows(original, 'users', USER_COLUMNS))
    expect(await rows(restored, 'api_keys', KEY_COLUMNS)).toEqual(
      await rows(original, 'api_keys', KEY_COLUMNS),
    )
    expect(await rows(restored, 'permissions', PERMISSION_COLUMNS)).toEqual(
      await rows(original, 'permissions', PERMISSION_COLUMNS),
    )
    // History and the webhook log went on after the backup: what it has is the original's start.
    for (const [table, columns] of [
      ['actions', ACTION_COLUMNS],
      ['webhook_notifications', NOTIFICATION_COLUMNS],
      ['webhook_attempts', ATTEMPT_COLUMNS],
    ] as const) {
      const got = await rows(restored, table, [...columns])
      const live = await rows(original, table, [...columns])
      expect(got.length, table).toBeGreaterThan(0)
      expect(live.slice(0, got.length), table).toEqual(got)
    }
    // The restored site has exactly the blobs its database names, each intact.
    const check = await verifyBlobs(restored.database, restored.blobs)
    expect(check).toMatchObject({ ok: true, missing: 0, mismatched: 0, orphans: 0 })
    // A second restore into the now non-empty site is refused, and changes nothing.
    await expect(restoreSite({ config, databaseSchema: schemaOf(s) }, dir)).rejects.toThrow(BackupError)
    await expect(restoreSite({ config, databaseSchema: schemaOf(s) }, dir)).rejects.toThrow(
      /not empty|already has tables|exists/,
    )
  })

  it('refuses a backup folder that is not empty, and a damaged or unfinished backup', async () => {
    const s = await server(dialect)
    await uploaded(s, 'a.txt', 'hello')
    const busy = await tmp('busy')
    await fs.writeFile(path.join(busy, 'x'), 'x')
    await expect(
      backupSite({ config: s.container.config, databaseSchema: schemaOf(s) }, busy),
    ).rejects.toThrow(/is not empty/)

    const dir = path.join(await tmp('backup'), 'site')
    const { manifest } = await backupSite({ config: s.container.config, databaseSchema: schemaOf(s) }, dir)
    // The database file is the backup's own copy (the blobs may be links to the store's files).
    const dbFile = path.join(dir, manifest.database.file)
    const bytes = await fs.readFile(dbFile)
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 0xff
    await fs.writeFile(dbFile, bytes)
    await expect(
      restoreSite({ config: await emptySite(dialect), databaseSchema: schemaOf(s) }, dir),
    ).rejects.toThrow(/damaged: 1 file\(s\) do not match SHA256SUMS/)
    await fs.rm(path.join(dir, MANIFEST))
    await expect(
      restoreSite({ config: await emptySite(dialect), databaseSchema: schemaOf(s) }, dir),
    ).rejects.toThrow(/is not a Wharf backup/)
  })

  it('verify finds missing, damaged and orphan blobs, changes nothing, and --repair removes only orphans', async () => {
    const s = await server(dialect)
    const t = target(s)
    for (const name of ['keep.txt', 'gone.txt', 'damaged.txt', 'short.txt'])
      await uploaded(s, name, `${name} content`)
    for (const name of ['keep.txt', 'gone.txt', 'damaged.txt', 'short.txt']) await withChecksums(t, name)
    const c = s.container
    const keyOf = async (p: string) =>
      (await c.db.selectFrom('files').select('blob_key').where('path', '=', p).executeTakeFirstOrThrow())
        .blob_key as string
    expect(await verifyBlobs(c.database, c.blobs)).toMatchObject({ ok: true, files: 4, orphans: 0 })

    const storage = path.join(c.config.dataDir, 'storage')
    const file = (key: string) => path.join(storage, 'blobs', key.slice(0, 2), key.slice(2, 4), key)
    // A blob is a file or a folder of parts; each is replaced by a new file (a new inode: a
    // blob's file may be a hard link shared with another name).
    const replace = async (key: string, content: string) => {
      await fs.rm(file(key), { recursive: true })
      await fs.writeFile(file(key), content)
    }
    await fs.rm(file(await keyOf('gone.txt')), { recursive: true })
    await replace(await keyOf('damaged.txt'), 'DAMAGED.txt content')
    await replace(await keyOf('short.txt'), 'short')
    const orphan = await c.blobs.put((await import('node:stream')).Readable.from([Buffer.from('nobody')]))

    const problems: unknown[] = []
    const report = await verifyBlobs(c.database, c.blobs, { onProblem: (p) => problems.push(p) })
    expect(report).toMatchObject({ ok: false, files: 4, missing: 1, mismatched: 2, orphans: 1, removed: 0 })
    expect(problems).toEqual(
      expect.arrayContaining([
        { kind: 'missing', key: await keyOf('gone.txt'), path: 'gone.txt' },
        expect.objectContaining({ kind: 'md5', path: 'damaged.txt' }),
        { kind: 'size', key: await keyOf('short.txt'), path: 'short.txt', expected: 17, found: 5 },
        { kind: 'orphan', key: orphan.key, removed: false },
      ]),
    )
    expect(await c.blobs.size(orphan.key)).toBe(6)
    // --quick reads no blob: the damaged one of the right size passes.
    expect(await verifyBlobs(c.database, c.blobs, { quick: true })).toMatchObject({
      missing: 1,
      mismatched: 1,
    })

    const repaired = await verifyBlobs(c.database, c.blobs, { repair: true })
    expect(repaired).toMatchObject({ orphans: 1, removed: 1 })
    expect(await c.blobs.size(orphan.key)).toBeNull()
    expect(await c.blobs.size(await keyOf('keep.txt'))).toBe(16)
    expect(await text(await c.blobs.open(await keyOf('keep.txt')))).toBe('keep.txt content')
  })

  it.runIf(dialect === 'sqlite')(
    'runs as `wharf backup`, `wharf restore` and `wharf verify`, with exit codes',
    async () => {
      const s = await server(dialect)
      await uploaded(s, 'a.txt', 'hello from the command')
      const cli = builtServer()
      const { BASE_URL: _, ...inherited } = process.env
      const env = { ...inherited, DATA_DIR: s.container.config.dataDir, LOG_LEVEL: 'silent' }
      const dir = path.join(await tmp('backup'), 'site')
      const backup = await run(process.execPath, [cli, 'backup', dir], { env })
      expect(backup.stdout).toMatch(
        /^backed up the sqlite database and 1 files' blobs \(0\.0 MiB, copied\) into /,
      )
      expect(await fs.stat(path.join(dir, SQLITE_FILE))).toBeTruthy()

      const verify = await run(process.execPath, [cli, 'verify'], { env })
      expect(verify.stdout).toMatch(
        /checked 1 file\(s\) and 0 export\(s\) against 1 blob\(s\): 0 missing, 0 damaged, 0 orphan\(s\)/,
      )

      const target = await tmp('restored')
      const restoreEnv = { ...inherited, DATA_DIR: target, LOG_LEVEL: 'silent' }
      const restore = await run(process.execPath, [cli, 'restore', dir], { env: restoreEnv })
      expect(restore.stdout).toMatch(
        /^restored the sqlite database of .* and 1 blob\(s\); 3 file\(s\) matched SHA256SUMS/,
      )
      const again = await run(process.execPath, [cli, 'restore', dir], { env: restoreEnv }).catch((e) => e)
      expect(again.code).toBe(1)
      expect(again.stderr).toMatch(/not empty/)
      const missingDir = await run(process.execPath, [cli, 'backup', dir], { env }).catch((e) => e)
      expect(missingDir.code).toBe(1)
      expect(missingDir.stderr).toMatch(/is not empty: back up into a new or empty folder/)

      await fs.rm(path.join(target, 'storage', 'blobs'), { recursive: true })
      const broken = await run(process.execPath, [cli, 'verify'], { env: restoreEnv }).catch((e) => e)
      expect(broken.code).toBe(1)
      expect(broken.stdout).toMatch(/^missing {2}[0-9a-f]{32} {2}a\.txt$/m)
    },
    // A process per command, one after another, each loading Wharf.
    90_000,
  )

  it('on S3 lists the objects the database names, and the restore reports those the bucket lacks', async () => {
    const s3 = await startS3Server()
    cleanups.push(() => s3.close())
    // The AWS SDK reads its credentials from the process's environment.
    vi.stubEnv('AWS_ACCESS_KEY_ID', S3_CREDENTIALS.accessKeyId)
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3_CREDENTIALS.secretAccessKey)
    cleanups.push(async () => vi.unstubAllEnvs())
    const bucket = await s3.bucket()
    const s3Env = {
      BLOB_STORE: 's3',
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: bucket,
      S3_PREFIX: 'site/',
      S3_FORCE_PATH_STYLE: 'true',
      S3_TRANSFER_MODE: 'proxy',
    }
    const s = await server(dialect, s3Env)
    for (const name of ['one.txt', 'two.txt']) await uploaded(s, name, `${name}!`)
    const c = s.container
    const keys = (
      await c.db
        .selectFrom('files')
        .select(['blob_key', 'path'])
        .where('type', '=', 'file')
        .orderBy('path')
        .execute()
    ).map((r) => r.blob_key as string)
    const orphan = await c.blobs.put((await import('node:stream')).Readable.from([Buffer.from('nobody')]))
    expect(await verifyBlobs(c.database, c.blobs)).toMatchObject({
      files: 2,
      blobs: 3,
      orphans: 1,
      ok: false,
    })
    expect((await verifyBlobs(c.database, c.blobs, { repair: true })).removed).toBe(1)
    expect(await c.blobs.size(orphan.key)).toBeNull()

    const dir = path.join(await tmp('backup'), 'site')
    const { manifest } = await backupSite({ config: c.config, databaseSchema: schemaOf(s) }, dir)
    expect(manifest.store).toEqual({ kind: 's3', copied: false, bucket, prefix: 'site/' })
    const listed = (await fs.readFile(path.join(dir, OBJECTS), 'utf8')).trim().split('\n').sort()
    expect(listed).toEqual(keys.map((k) => `site/blobs/${k}\t8`).sort())
    await expect(fs.stat(path.join(dir, 'storage'))).rejects.toThrow(/ENOENT/)

    await c.blobs.delete(keys[0]!)
    const config = loadConfig({ ...(await emptySite(dialect)).env, ...s3Env })
    const report = await restoreSite({ config, databaseSchema: schemaOf(s) }, dir, (objectKey) =>
      c.blobs.size(objectKey.slice('site/blobs/'.length)),
    )
    expect(report.missingObjects).toEqual([`site/blobs/${keys[0]}`])
    expect(report.restoredBlobs).toBe(0)
    // A disk site cannot take it: its files are in the bucket.
    await expect(
      restoreSite({ config: await emptySite(dialect), databaseSchema: schemaOf(s) }, dir),
    ).rejects.toThrow(/BLOB_STORE=s3/)
  })
})
