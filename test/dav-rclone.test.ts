import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { basic, dav, historyInterfaces, hookTo, md5, runClient, uploadsOf } from './helpers/dav.js'
import { startListener, type TestListener } from './helpers/listener.js'
import { call, dialects, grant, makeUser, useServer } from './helpers/server.js'

/** rclone's webdav backend, a client Wharf did not write, against the tree under /dav/. */
describe.each(dialects)('WebDAV with rclone (%s)', (dialect) => {
  let listener: TestListener
  let dir: string
  let remote: string
  /** The same as an ownCloud server: rclone then sends each file's time in X-OC-Mtime. */
  let ocRemote: string
  let env: Record<string, string>
  let rita: string

  const rclone = (...args: string[]) =>
    runClient('rclone', [...args, '--retries', '1', '--low-level-retries', '1', '--timeout', '20s'], { env })

  const s = useServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })
  beforeAll(async () => {
    listener = await startListener()
    await hookTo(s, listener)
    const u = await makeUser(s, { username: 'rita' })
    rita = u.password
    await grant(s, u.id, 'drop', 'full')
    await grant(s, u.id, 'seen', 'readonly')
    expect((await dav(s, 'MKCOL', '/drop', { auth: basic('admin', 'admin-password-1') })).status).toBe(201)
    expect((await dav(s, 'MKCOL', '/seen', { auth: basic('admin', 'admin-password-1') })).status).toBe(201)
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-rclone-'))
    await fs.writeFile(path.join(dir, 'rclone.conf'), '')
    env = {
      RCLONE_CONFIG: path.join(dir, 'rclone.conf'),
      HOME: dir,
      RCLONE_CACHE_DIR: path.join(dir, 'cache'),
    }
    const obscured = (await runClient('rclone', ['obscure', u.password], { env })).stdout.trim()
    remote = `:webdav,url='${s.url}/dav/',vendor=other,user=rita,pass=${obscured}:`
    ocRemote = `:webdav,url='${s.url}/dav/',vendor=owncloud,user=rita,pass=${obscured}:`
    await fs.mkdir(path.join(dir, 'src', 'sub'), { recursive: true })
    await fs.writeFile(path.join(dir, 'src', 'big.bin'), crypto.randomBytes(3 * 1024 * 1024 + 17))
    await fs.writeFile(path.join(dir, 'src', 'a b ü.txt'), 'hello from rclone\n')
    await fs.writeFile(path.join(dir, 'src', 'sub', 'c.txt'), 'c\n')
  })
  afterAll(async () => {
    await listener?.close()
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
    expect(ls.stdout.trim().split('\n')).toEqual(['drop/', 'seen/'])
  })

  it('keeps the times rclone sends in X-OC-Mtime, so a second copy transfers nothing', async () => {
    const src = path.join(dir, 'src')
    await fs.utimes(path.join(src, 'sub', 'c.txt'), 1_000_000_000, 1_000_000_000)
    const first = await rclone('copy', '-v', src, `${ocRemote}drop/oc`)
    expect(first.code, first.stderr).toBe(0)
    expect(copied(first.stderr)).toBe(3)
    const c = await call(s, 'GET', '/files/drop/oc/sub/c.txt', { key: s.adminKey })
    expect(c.body.provided_mtime).toBe('2001-09-09T01:46:40Z')
    const again = await rclone('copy', '-v', src, `${ocRemote}drop/oc`)
    expect(again.code, again.stderr).toBe(0)
    expect(copied(again.stderr)).toBe(0)
    const found = await dav(s, 'PROPFIND', '/drop/oc/sub/c.txt', {
      auth: basic('rita', rita),
      headers: { Depth: '0' },
    })
    expect(found.text).toContain('<D:getlastmodified>Sun, 09 Sep 2001 01:46:40 GMT</D:getlastmodified>')
    const put = await dav(s, 'PUT', '/drop/oc/put.txt', {
      auth: basic('rita', rita),
      headers: { 'X-OC-Mtime': '946684800.5' },
      body: 'x',
    })
    expect(put.status).toBe(201)
    expect(put.headers.get('x-oc-mtime')).toBe('accepted')
    const putFile = await call(s, 'GET', '/files/drop/oc/put.txt', { key: s.adminKey })
    expect(putFile.body.provided_mtime).toBe('2000-01-01T00:00:00Z')
    const bad = await dav(s, 'PUT', '/drop/oc/bad.txt', {
      auth: basic('rita', rita),
      headers: { 'X-OC-Mtime': 'yesterday' },
      body: 'x',
    })
    expect(bad.status).toBe(400)
    expect((await call(s, 'GET', '/files/drop/oc/bad.txt', { key: s.adminKey })).status).toBe(404)
  })

  it('sets a time by PROPPATCH of getlastmodified, with write permission only', async () => {
    const auth = basic('rita', rita)
    const admin = basic('admin', 'admin-password-1')
    expect((await dav(s, 'PUT', '/drop/when.txt', { auth, body: 'when' })).status).toBe(201)
    expect((await dav(s, 'PUT', '/seen/when.txt', { auth: admin, body: 'when' })).status).toBe(201)
    const patch = (date: string) =>
      '<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop>' +
      `<D:getlastmodified>${date}</D:getlastmodified></D:prop></D:set></D:propertyupdate>`
    const ok = await dav(s, 'PROPPATCH', '/drop/when.txt', {
      auth,
      body: patch('Sat, 01 Jan 2000 00:00:00 GMT'),
    })
    expect(ok.status).toBe(207)
    expect(ok.text).toMatch(/<D:prop><D:getlastmodified\/><\/D:prop><D:status>HTTP\/1.1 200 OK/)
    const file = await call(s, 'GET', '/files/drop/when.txt', { key: s.adminKey })
    expect(file.body.provided_mtime).toBe('2000-01-01T00:00:00Z')
    const listed = await dav(s, 'PROPFIND', '/drop/', { auth, headers: { Depth: '1' } })
    expect(listed.text).toContain('<D:getlastmodified>Sat, 01 Jan 2000 00:00:00 GMT</D:getlastmodified>')

    const readOnly = await dav(s, 'PROPPATCH', '/seen/when.txt', {
      auth,
      body: patch('Sat, 01 Jan 2000 00:00:00 GMT'),
    })
    expect(readOnly.status).toBe(403)
    const notDate = await dav(s, 'PROPPATCH', '/drop/when.txt', { auth, body: patch('someday') })
    expect(notDate.status).toBe(400)
    // With a property Wharf cannot keep, nothing is set (all or nothing): 403 and 424.
    const mixed = await dav(s, 'PROPPATCH', '/drop/when.txt', {
      auth,
      body:
        '<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:x="urn:x"><D:set><D:prop>' +
        '<D:getlastmodified>Mon, 01 Jan 2024 00:00:00 GMT</D:getlastmodified><x:color>red</x:color>' +
        '</D:prop></D:set></D:propertyupdate>',
    })
    expect(mixed.status).toBe(207)
    expect(mixed.text).toContain('424 Failed Dependency')
    const seen = await call(s, 'GET', '/files/seen/when.txt', { key: s.adminKey })
    expect(seen.body.provided_mtime).toBeNull()
    const after = await call(s, 'GET', '/files/drop/when.txt', { key: s.adminKey })
    expect(after.body.provided_mtime).toBe('2000-01-01T00:00:00Z')
  })
})

/** How many files rclone -v says it copied. */
const copied = (log: string) => log.match(/: Copied \(/g)?.length ?? 0
