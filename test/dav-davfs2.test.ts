import { execFile } from 'node:child_process'
import crypto from 'node:crypto'
import { existsSync } from 'node:fs'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { basic, dav, hookTo, md5, uploadsOf } from './helpers/dav.js'
import { startListener, type TestListener } from './helpers/listener.js'
import { grant, makeUser, useServer } from './helpers/server.js'

const MOUNT_DAVFS = '/usr/sbin/mount.davfs'
/** davfs2 mounts through FUSE, which needs root and /dev/fuse. */
const canMount = existsSync(MOUNT_DAVFS) && existsSync('/dev/fuse') && process.getuid?.() === 0
if (!canMount) {
  console.warn(
    'dav-davfs2: skipped (needs root, /dev/fuse and davfs2: `apt-get install davfs2`; .ci/run installs it)',
  )
}

function run(file: string, args: string[], timeoutMs = 30_000): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    )
  })
}

/**
 * A davfs2 mount of /dav/, as a Linux desktop or server would mount Wharf: files are written,
 * read back, moved and deleted through the file system. davfs2 1.6 cannot list a folder on the
 * kernels of the machines the tests run on (readdir fails with EINVAL against any WebDAV server,
 * rclone's own included), so the test names its paths rather than listing them.
 */
describe.skipIf(!canMount)('WebDAV mounted with davfs2 (sqlite)', () => {
  let listener: TestListener
  let work: string
  let mnt: string

  const s = useServer('sqlite', { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })
  beforeAll(async () => {
    listener = await startListener()
    await hookTo(s, listener)
    const u = await makeUser(s, { username: 'dora' })
    await grant(s, u.id, 'box', 'full')
    expect((await dav(s, 'MKCOL', '/box', { auth: basic('admin', 'admin-password-1') })).status).toBe(201)
    work = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-davfs2-'))
    mnt = path.join(work, 'mnt')
    await fs.mkdir(mnt)
    // mount.davfs gives up root for its own user (davfs2), which must reach its cache.
    await fs.chmod(work, 0o755)
    await fs.mkdir(path.join(work, 'cache'), { mode: 0o777 })
    await fs.chmod(path.join(work, 'cache'), 0o777)
    // Its own configuration and credentials, not the system's (/etc/davfs2).
    const secrets = path.join(work, 'secrets')
    await fs.writeFile(secrets, `${mnt} dora ${u.password}\n`, { mode: 0o600 })
    const conf = path.join(work, 'davfs2.conf')
    await fs.writeFile(conf, `secrets ${secrets}\nuse_locks 1\ncache_dir ${path.join(work, 'cache')}\n`)
    const mounted = await run(MOUNT_DAVFS, ['-o', `conf=${conf}`, `${s.url}/dav/`, mnt])
    expect(mounted.code, mounted.out).toBe(0)
  })
  afterAll(async () => {
    if (mnt) await run('/bin/umount', [mnt])
    await listener?.close()
    if (work) await fs.rm(work, { recursive: true, force: true })
  })

  it('writes, reads back, moves and deletes files through the mount', async () => {
    const data = crypto.randomBytes(3_000_000)
    await fs.writeFile(path.join(work, 'data.bin'), data)
    await fs.copyFile(path.join(work, 'data.bin'), path.join(mnt, 'box', 'data.bin'))
    await fs.mkdir(path.join(mnt, 'box', 'in'))
    await fs.rename(path.join(mnt, 'box', 'data.bin'), path.join(mnt, 'box', 'in', 'moved.bin'))
    // davfs2 uploads a file when it is closed (or at the latest when unmounted): wait for Wharf.
    await expect
      .poll(
        async () =>
          (await dav(s, 'HEAD', '/box/in/moved.bin', { auth: basic('admin', 'admin-password-1') })).status,
        {
          timeout: 20_000,
        },
      )
      .toBe(200)
    expect(md5(await fs.readFile(path.join(mnt, 'box', 'in', 'moved.bin')))).toBe(md5(data))
    expect((await fs.stat(path.join(mnt, 'box', 'in', 'moved.bin'))).size).toBe(data.length)
    await expect.poll(() => uploadsOf(listener, 'box/data.bin').length, { timeout: 10_000 }).toBe(1)
    expect(uploadsOf(listener, 'box/data.bin')[0]!.json).toMatchObject({ protocol: 'dav', username: 'dora' })

    await fs.rm(path.join(mnt, 'box', 'in', 'moved.bin'))
    await expect
      .poll(
        async () =>
          (await dav(s, 'HEAD', '/box/in/moved.bin', { auth: basic('admin', 'admin-password-1') })).status,
        {
          timeout: 20_000,
        },
      )
      .toBe(404)
  })

  it('is refused outside its folder permissions', async () => {
    // dora may write in box only: a folder beside it is refused, and nothing reaches Wharf.
    // davfs2 turns the 403 into EINVAL (it maps few HTTP statuses to their own errors).
    const refused = await fs.mkdir(path.join(mnt, 'other')).then(
      () => null,
      (err: NodeJS.ErrnoException) => err.code,
    )
    expect(['EACCES', 'EPERM', 'EINVAL']).toContain(refused)
    const admin = basic('admin', 'admin-password-1')
    expect((await dav(s, 'PROPFIND', '/other', { auth: admin, headers: { Depth: '0' } })).status).toBe(404)
  })
})
