import crypto from 'node:crypto'
import path from 'node:path'
import { text } from 'node:stream/consumers'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { ApiError } from '../src/api/errors.js'
import { BlobJanitor } from '../src/blobs/blob-janitor.js'
import type { Principal } from '../src/identity/principal.js'
import { FileSystem } from '../src/modules/files/vfs/file-system.js'
import { NOTHING_LEFT, remains, stagedUpload } from './helpers/abandoned-uploads.js'
import { startListener, type TestListener } from './helpers/listener.js'
import { call, dialects, grant, makeKey, makeUser, useServer } from './helpers/server.js'

async function refusal(p: Promise<unknown>): Promise<string> {
  const err = (await p.then(
    () => null,
    (e: unknown) => e,
  )) as ApiError | null
  if (!err) throw new Error('expected a refusal')
  return err.type
}

const HOUR = 3600_000

describe.each(dialects)('file-system facade (%s)', (dialect) => {
  let listener: TestListener
  let alice: Principal

  const s = useServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })
  beforeAll(async () => {
    listener = await startListener()
    const r = await call(s, 'PATCH', '/webhook_settings', {
      key: s.adminKey,
      body: { url: listener.url, triggers: ['Upload', 'Download', 'Rename', 'Move'], enabled: true },
    })
    expect(r.status).toBe(200)
    const u = await makeUser(s, { username: 'alice' })
    await grant(s, u.id, 'shared', 'full')
    await s.container.services.folders.mkdir(
      (
        await s.container.services.protocolLogin.password(s.container.site.id, {
          username: 'admin',
          password: 'admin-password-1',
          ip: '127.0.0.1',
          interface: 'sftp',
        })
      ).principal,
      'shared',
      {},
    )
    const session = await s.container.services.protocolLogin.password(s.container.site.id, {
      username: 'alice',
      password: u.password,
      ip: '127.0.0.9',
      interface: 'sftp',
    })
    alice = session.principal
  })
  afterAll(async () => {
    await listener?.close()
  })

  const fsOf = (p: Principal) => s.container.services.fileSystem.as(p, 'sftp')
  /** The md5 of a file once the background job has computed it (null when the upload commits). */
  const md5Of = (path: string) =>
    vi.waitFor(
      async () => {
        const e = await fsOf(alice).exists(path)
        if (!e?.md5) throw new Error(`no md5 yet for ${path}`)
        return e.md5
      },
      { timeout: 20_000, interval: 20 },
    )
  const storage = () => path.join(s.container.config.dataDir, 'storage')

  it('streams a file in, publishes it on commit with interface sftp, and reads it back at offsets', async () => {
    const files = fsOf(alice)
    const w = await files.createWriter('shared/a.bin', { overwrite: true })
    const data = crypto.randomBytes(300_000)
    for (let i = 0; i < data.length; i += 32_768) await w.write(data.subarray(i, i + 32_768))
    // Not visible before the client closes the file.
    expect(await files.exists('shared/a.bin')).toBeNull()
    const entry = await w.commit()
    expect(entry).toMatchObject({ path: 'shared/a.bin', type: 'file', size: data.length })
    expect(await md5Of('shared/a.bin')).toBe(crypto.createHash('md5').update(data).digest('hex'))

    const f = await files.openFile('shared/a.bin')
    const tail = await text(await f.read({ start: 299_990 }))
    expect(Buffer.from(tail, 'latin1').length).toBeGreaterThan(0)
    const chunks: Buffer[] = []
    for await (const c of await f.read({ start: 0 })) chunks.push(c as Buffer)
    expect(Buffer.concat(chunks).equals(data)).toBe(true)

    const names: string[] = []
    for await (const e of files.list('shared')) names.push(e.name)
    expect(names).toContain('a.bin')

    const [upload, download] = await listener.waitFor(2)
    expect(upload!.json).toMatchObject({ operation: 'Upload', protocol: 'sftp', path: 'shared/a.bin' })
    expect(download!.json).toMatchObject({ operation: 'Download', protocol: 'sftp', path: 'shared/a.bin' })
    const actions = await s.container.db
      .selectFrom('actions')
      .select(['action', 'interface', 'username'])
      .where('path', '=', 'shared/a.bin')
      .orderBy('id')
      .execute()
    expect(actions).toEqual([
      { action: 'create', interface: 'sftp', username: 'alice' },
      { action: 'read', interface: 'sftp', username: 'alice' },
    ])
  })

  it('answers a SHA-256 from the checksum job once known, and from the bytes before', async () => {
    const files = fsOf(alice)
    const data = crypto.randomBytes(70_000)
    const sha256 = crypto.createHash('sha256').update(data).digest('hex')
    await s.container.checksums.stop()
    try {
      const w = await files.createWriter('shared/summed.bin', { overwrite: true })
      await w.write(data)
      await w.commit()
      // Not computed yet: read from the bytes.
      expect(await files.checksum('shared/summed.bin', 'sha256')).toBe(sha256)
    } finally {
      await s.container.checksums.start()
    }
    await md5Of('shared/summed.bin')
    const row = await s.container.db
      .selectFrom('files')
      .select(['blob_key', 'sha256'])
      .where('path', '=', 'shared/summed.bin')
      .executeTakeFirstOrThrow()
    expect(row.sha256).toBe(sha256)
    // Known: answered without the bytes (gone here), which a SHA-1 still needs.
    await s.container.blobs.delete(row.blob_key!)
    expect(await files.checksum('shared/summed.bin', 'sha256')).toBe(sha256)
    await expect(files.checksum('shared/summed.bin', 'sha1')).rejects.toThrow()
    await files.delete('shared/summed.bin')
  })

  it('cuts a long stream into upload parts without losing a byte', async () => {
    const c = s.container
    const small = new FileSystem({
      ...c.services,
      blobs: c.blobs,
      now: c.now,
      writerPartBytes: 50_000,
    }).as(alice, 'sftp')
    const data = crypto.randomBytes(180_001)
    const w = await small.createWriter('shared/parts.bin')
    for (let i = 0; i < data.length; i += 70_000) await w.write(data.subarray(i, i + 70_000))
    const entry = await w.commit()
    expect(entry.size).toBe(data.length)
    expect(await md5Of('shared/parts.bin')).toBe(crypto.createHash('md5').update(data).digest('hex'))
  })

  it('leaves nothing visible when a writer is aborted', async () => {
    const files = fsOf(alice)
    const w = await files.createWriter('shared/dropped.bin')
    await w.write(Buffer.alloc(10_000, 1))
    await w.abort()
    expect(await files.exists('shared/dropped.bin')).toBeNull()
  })

  it('discards an aborted writer’s upload at once: its record, its staged parts and the part in flight', async () => {
    const c = s.container
    const small = new FileSystem({
      ...c.services,
      blobs: c.blobs,
      now: c.now,
      writerPartBytes: 50_000,
    }).as(alice, 'sftp')
    const w = await small.createWriter('shared/abandoned.bin')
    await w.write(crypto.randomBytes(120_000))
    const upload = await stagedUpload(c.db, 'shared/abandoned.bin', 2)
    const before = await remains(c.db, storage(), upload)
    expect(before).toMatchObject({ record: true, partRecords: 2, stagedParts: ['1', '2'] })
    // Part 3 is arriving in a temporary file.
    await expect.poll(async () => (await remains(c.db, storage(), upload)).temporary.length).toBe(1)
    await w.abort()
    expect(await remains(c.db, storage(), upload)).toEqual(NOTHING_LEFT)
    expect(await small.exists('shared/abandoned.bin')).toBeNull()
  })

  it('gives a writer’s upload a short life of its own, which the janitor ends once nothing renews it', async () => {
    const c = s.container
    const w = await fsOf(alice).createWriter('shared/orphan.bin')
    await w.write(Buffer.alloc(1000, 1))
    const row = await c.db
      .selectFrom('uploads')
      .select(['id', 'ref', 'created_at', 'expires_at', 'expiry_seconds'])
      .where('path', '=', 'shared/orphan.bin')
      .executeTakeFirstOrThrow()
    expect(row.expiry_seconds).toBe(120)
    expect(row.expires_at - row.created_at).toBe(120_000)
    // A REST upload opened meanwhile lives for UPLOAD_EXPIRY_MINUTES.
    const [rest] = await c.services.uploads.begin(alice, 'shared/rest.bin', {})
    // The janitor as it runs two minutes later when the writer's process is gone (no renewal).
    const later = new BlobJanitor(c.db, c.blobs, () => Date.now() + 121_000, { graceMs: HOUR })
    expect((await later.runOnce()).uploadsExpired).toBe(1)
    expect(await remains(c.db, storage(), row)).toMatchObject({
      record: false,
      partRecords: 0,
      stagedParts: [],
    })
    const left = await c.db
      .selectFrom('uploads')
      .select('ref')
      .where('ref', 'in', [row.ref, rest!.ref])
      .execute()
    expect(left).toEqual([{ ref: rest!.ref }])
    await w.abort()
  })

  it('renews its upload while it is open, however slowly the client sends', async () => {
    const c = s.container
    const quick = new FileSystem({
      ...c.services,
      blobs: c.blobs,
      now: c.now,
      writerExpirySeconds: 4,
    }).as(alice, 'sftp')
    const w = await quick.createWriter('shared/slow.bin')
    const expiry = async () =>
      (
        await c.db
          .selectFrom('uploads')
          .select('expires_at')
          .where('path', '=', 'shared/slow.bin')
          .executeTakeFirstOrThrow()
      ).expires_at
    const first = await expiry()
    await expect.poll(expiry, { timeout: 10_000 }).toBeGreaterThan(first)
    await w.write(Buffer.from('late bytes'))
    expect((await w.commit()).size).toBe(10)
  })

  it('fails a writer whose upload expired all the same, and keeps nothing of it', async () => {
    const c = s.container
    const quick = new FileSystem({
      ...c.services,
      blobs: c.blobs,
      now: c.now,
      writerExpirySeconds: 4,
    }).as(alice, 'sftp')
    const w = await quick.createWriter('shared/stalled.bin')
    await w.write(Buffer.alloc(5000, 2))
    const upload = await c.db
      .selectFrom('uploads')
      .select(['id', 'ref'])
      .where('path', '=', 'shared/stalled.bin')
      .executeTakeFirstOrThrow()
    // As if the process had stalled past the upload's lifetime.
    await c.db.updateTable('uploads').set({ expires_at: 1 }).where('id', '=', upload.id).execute()
    await expect
      .poll(
        () =>
          w.write(Buffer.from('x')).then(
            () => 'written',
            (e: ApiError) => e.type,
          ),
        { timeout: 10_000 },
      )
      .toBe('not-found/file-upload-not-found')
    expect(await refusal(w.commit())).toBe('not-found/file-upload-not-found')
    expect(await remains(c.db, storage(), upload)).toEqual(NOTHING_LEFT)
    expect(await quick.exists('shared/stalled.bin')).toBeNull()
  })

  it('renames, copies, makes folders and deletes with the REST rules', async () => {
    const files = fsOf(alice)
    await files.mkdir('shared/sub')
    expect(await refusal(files.mkdir('shared/sub'))).toBe('processing-failure/destination-exists')
    const w = await files.createWriter('shared/sub/x.txt')
    await w.write(Buffer.from('hello'))
    await w.commit()
    expect(await refusal(files.createWriter('shared/sub/x.txt', { overwrite: false }))).toBe(
      'processing-failure/destination-exists',
    )
    await files.rename('shared/sub/x.txt', 'shared/sub/y.txt')
    await files.copy('shared/sub/y.txt', 'shared/z.txt')
    expect(await text(await files.openRead('shared/z.txt'))).toBe('hello')
    expect(await refusal(files.delete('shared/sub'))).toBe('processing-failure/folder-not-empty')
    await files.delete('shared/sub', { recursive: true })
    expect(await files.exists('shared/sub')).toBeNull()
  })

  it('refuses outside the folder permissions and for a key with permission set none', async () => {
    const files = fsOf(alice)
    expect(await refusal(files.createWriter('elsewhere.txt'))).toBe(
      'not-authorized/write-permission-required',
    )
    const root: string[] = []
    for await (const e of files.list('')) root.push(e.path)
    expect(root).toEqual(['shared'])
    const key = await makeKey(s, alice.user!.id, { permission_set: 'none' })
    const byKey = await s.container.services.auth.authenticate({ apiKey: key.key }, '127.0.0.1', 'sftp')
    expect(await refusal(fsOf(byKey).stat('shared'))).toBe('not-authorized/full-permission-required')
    expect(await refusal(files.stat('shared/../x'))).toBe('bad-request/invalid-path')
  })
})
