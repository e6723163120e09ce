import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { basic, dav, historyInterfaces, hookTo, md5, runClient, uploadsOf } from './helpers/dav.js'
import { startListener, type TestListener } from './helpers/listener.js'
import { dialects, grant, makeUser, startServer, type TestServer } from './helpers/server.js'

/** rclone's webdav backend, a client Wharf did not write, against the tree under /dav/. */
describe.each(dialects)('WebDAV with rclone (%s)', (dialect) => {
  let s: TestServer
  let listener: TestListener
  let dir: string
  let remote: string
  let env: Record<string, string>

  const rclone = (...args: string[]) =>
    runClient('rclone', [...args, '--retries', '1', '--low-level-retries', '1', '--timeout', '20s'], { env })

  beforeAll(async () => {
    s = await startServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })
    listener = await startListener()
    await hookTo(s, listener)
    const u = await makeUser(s, { username: 'rita' })
    await grant(s, u.id, 'drop', 'full')
    expect((await dav(s, 'MKCOL', '/drop', { auth: basic('admin', 'admin-password-1') })).status).toBe(201)
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-rclone-'))
    await fs.writeFile(path.join(dir, 'rclone.conf'), '')
    env = {
      RCLONE_CONFIG: path.join(dir, 'rclone.conf'),
      HOME: dir,
      RCLONE_CACHE_DIR: path.join(dir, 'cache'),
    }
    const obscured = (await runClient('rclone', ['obscure', u.password], { env })).stdout.trim()
    remote = `:webdav,url='${s.url}/dav/',vendor=other,user=rita,pass=${obscured}:`
    await fs.mkdir(path.join(dir, 'src', 'sub'), { recursive: true })
    await fs.writeFile(path.join(dir, 'src', 'big.bin'), crypto.randomBytes(3 * 1024 * 1024 + 17))
    await fs.writeFile(path.join(dir, 'src', 'a b ü.txt'), 'hello from rclone\n')
    await fs.writeFile(path.join(dir, 'src', 'sub', 'c.txt'), 'c\n')
  })
  afterAll(async () => {
    await listener?.close()
    await s?.close()
    if (dir) await fs.rm(dir, { recursive: true, force: true })
  })

  it('copies a tree up, checks it byte for byte, lists it and copies it back down', async () => {
    const up = await rclone('copy', path.join(dir, 'src'), `${remote}drop/up`)
    expect(up.code, up.stderr).toBe(0)
    const check = await rclone('check', '--download', path.join(dir, 'src'), `${remote}drop/up`)
    expect(check.code, check.stderr).toBe(0)
    expect(check.stderr).toContain('0 differences found')
    const lsf = await rclone('lsf', '-R', `${remote}drop/up`)
    expect(lsf.stdout.trim().split('\n').sort()).toEqual(['a b ü.txt', 'big.bin', 'sub/', 'sub/c.txt'])
    const down = await rclone('copy', `${remote}drop/up`, path.join(dir, 'down'))
    expect(down.code, down.stderr).toBe(0)
    for (const f of ['big.bin', 'a b ü.txt', 'sub/c.txt']) {
      expect(md5(await fs.readFile(path.join(dir, 'down', f)))).toBe(
        md5(await fs.readFile(path.join(dir, 'src', f))),
      )
    }
  })

  it('sends each upload to the webhook with protocol dav, and into the history with interface dav', async () => {
    await expect.poll(() => uploadsOf(listener, 'drop/up/big.bin').length, { timeout: 10_000 }).toBe(1)
    expect(uploadsOf(listener, 'drop/up/big.bin')[0]!.json).toMatchObject({
      protocol: 'dav',
      username: 'rita',
    })
    await expect.poll(() => uploadsOf(listener, 'drop/up/sub/c.txt').length, { timeout: 10_000 }).toBe(1)
    expect(await historyInterfaces(s, 'drop/up/big.bin')).toContain('dav')
  })

  it('renames with moveto and deletes', async () => {
    const mv = await rclone('moveto', `${remote}drop/up/a b ü.txt`, `${remote}drop/up/renamed.txt`)
    expect(mv.code, mv.stderr).toBe(0)
    const del = await rclone('delete', `${remote}drop/up/sub`)
    expect(del.code, del.stderr).toBe(0)
    const lsf = await rclone('lsf', '-R', `${remote}drop/up`)
    expect(lsf.stdout.trim().split('\n').sort()).toEqual(['big.bin', 'renamed.txt', 'sub/'])
    await expect
      .poll(() => listener.received.some((r) => r.json?.operation === 'Rename' && r.json?.protocol === 'dav'))
      .toBe(true)
  })

  it('is refused outside its folder permissions', async () => {
    const r = await rclone('copyto', path.join(dir, 'src', 'sub', 'c.txt'), `${remote}elsewhere/c.txt`)
    expect(r.code).not.toBe(0)
    expect(r.stderr).toMatch(/403 Forbidden/)
    const ls = await rclone('lsf', `${remote}`)
    expect(ls.stdout.trim().split('\n')).toEqual(['drop/'])
  })
})
