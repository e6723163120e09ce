import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { basic, dav, historyInterfaces, hookTo, md5, runClient, uploadsOf } from './helpers/dav.js'
import { startListener, type TestListener } from './helpers/listener.js'
import { dialects, grant, makeKey, makeUser, useServer } from './helpers/server.js'

const LOCKINFO =
  '<?xml version="1.0" encoding="utf-8"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope>' +
  '<D:locktype><D:write/></D:locktype><D:owner><D:href>curl</D:href></D:owner></D:lockinfo>'

/** curl, as a script would drive WebDAV by hand: every method, every header, exact statuses. */
describe.each(dialects)('WebDAV with curl (%s)', (dialect) => {
  let listener: TestListener
  let dir: string
  let user: { username: string; password: string }

  /** curl against /dav; prints the status last on stdout (`-w`). */
  const curl = async (args: string[], o: { user?: string } = {}) => {
    const r = await runClient('curl', [
      '-sS',
      '--path-as-is',
      '-u',
      o.user ?? `${user.username}:${user.password}`,
      '-w',
      '\n%{http_code}',
      ...args,
    ])
    const at = r.stdout.lastIndexOf('\n')
    return { status: Number(r.stdout.slice(at + 1)), body: r.stdout.slice(0, at), stderr: r.stderr }
  }
  const url = (p: string) => `${s.url}/dav/${p}`

  const s = useServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })
  beforeAll(async () => {
    listener = await startListener()
    await hookTo(s, listener)
    const u = await makeUser(s, { username: 'curt' })
    user = u
    await grant(s, u.id, 'work', 'full')
    await grant(s, u.id, 'pub', 'readonly')
    const admin = basic('admin', 'admin-password-1')
    expect((await dav(s, 'MKCOL', '/work', { auth: admin })).status).toBe(201)
    expect((await dav(s, 'MKCOL', '/pub', { auth: admin })).status).toBe(201)
    expect((await dav(s, 'PUT', '/pub/notice.txt', { auth: admin, body: 'read me' })).status).toBe(201)
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-curl-'))
    await fs.writeFile(path.join(dir, 'file.bin'), crypto.randomBytes(100_000))
  })
  afterAll(async () => {
    await listener?.close()
    if (dir) await fs.rm(dir, { recursive: true, force: true })
  })

  it('uploads with -T, reads it whole and in ranges, and lists it with PROPFIND', async () => {
    const file = path.join(dir, 'file.bin')
    expect((await curl(['-T', file, url('work/file.bin')])).status).toBe(201)
    expect((await curl(['-T', file, url('work/file.bin')])).status).toBe(204)
    const got = await curl(['-o', path.join(dir, 'got.bin'), url('work/file.bin')])
    expect(got.status).toBe(200)
    expect(md5(await fs.readFile(path.join(dir, 'got.bin')))).toBe(md5(await fs.readFile(file)))
    const part = await curl(['-r', '1000-1999', '-o', path.join(dir, 'part.bin'), url('work/file.bin')])
    expect(part.status).toBe(206)
    expect(
      (await fs.readFile(path.join(dir, 'part.bin'))).equals((await fs.readFile(file)).subarray(1000, 2000)),
    ).toBe(true)
    expect((await curl(['-r', '200000-', url('work/file.bin')])).status).toBe(416)
    // As davfs2 writes: create only if absent, update only the version it has.
    expect((await curl(['-T', file, '-H', 'If-None-Match: *', url('work/file.bin')])).status).toBe(412)
    expect((await curl(['-T', file, '-H', 'If-Match: "0123"', url('work/file.bin')])).status).toBe(412)
    const etag = `"${md5(await fs.readFile(file))}"`
    // The entity tag is the md5 once the background job has computed it (change time and size before).
    await vi.waitFor(
      async () => {
        const row = await s.container.db
          .selectFrom('files')
          .select('md5')
          .where('path', '=', 'work/file.bin')
          .executeTakeFirst()
        if (!row?.md5) throw new Error('no md5 yet')
      },
      { timeout: 20_000, interval: 20 },
    )
    expect((await curl(['-T', file, '-H', `If-Match: ${etag}`, url('work/file.bin')])).status).toBe(204)
    expect((await curl(['-T', file, '-H', 'If-None-Match: *', url('work/fresh.bin')])).status).toBe(201)
    const head = await curl(['-I', url('work/file.bin')])
    expect(head.status).toBe(200)
    expect(head.body).toMatch(/content-length: 100000/i)

    const body =
      '<?xml version="1.0"?><a:propfind xmlns:a="DAV:"><a:prop><a:getcontentlength/><a:getetag/></a:prop></a:propfind>'
    const list = await curl([
      '-X',
      'PROPFIND',
      '-H',
      'Depth: 1',
      '-H',
      'Content-Type: application/xml',
      '--data-binary',
      body,
      url('work/'),
    ])
    expect(list.status).toBe(207)
    expect(list.body).toContain('<D:href>/dav/work/file.bin</D:href>')
    expect(list.body).toContain('<D:getcontentlength>100000</D:getcontentlength>')

    await expect.poll(() => uploadsOf(listener, 'work/file.bin').length, { timeout: 10_000 }).toBe(3)
    expect(uploadsOf(listener, 'work/file.bin')[0]!.json).toMatchObject({ protocol: 'dav', username: 'curt' })
    expect(await historyInterfaces(s, 'work/file.bin')).toContain('dav')
  })

  it('copies and moves with Destination and Overwrite', async () => {
    const copy = (to: string, overwrite?: 'T' | 'F') =>
      curl([
        '-X',
        'COPY',
        '-H',
        `Destination: ${to}`,
        ...(overwrite ? ['-H', `Overwrite: ${overwrite}`] : []),
        url('work/file.bin'),
      ])
    expect((await copy(url('work/copy.bin'))).status).toBe(201)
    expect((await copy('/dav/work/copy.bin', 'F')).status).toBe(412)
    expect((await copy(url('work/copy.bin'), 'T')).status).toBe(204)
    expect((await copy(url('work/copy.bin'), 'X' as 'T')).status).toBe(400)
    expect((await copy('http://other.example/dav/work/x.bin')).status).toBe(502)
    expect((await copy(`${s.url}/api/rest/v1/files/x`)).status).toBe(502)
    expect((await copy(url('work/nowhere/x.bin'))).status).toBe(409)
    expect((await copy(url('nowhere/x.bin'))).status).toBe(403)
    const mv = await curl([
      '-X',
      'MOVE',
      '-H',
      `Destination: ${url('work/moved%20copy.bin')}`,
      url('work/copy.bin'),
    ])
    expect(mv.status).toBe(201)
    const gone = await curl(['-o', '/dev/null', url('work/copy.bin')])
    expect(gone.status).toBe(404)
    expect((await curl(['-o', '/dev/null', url('work/moved%20copy.bin')])).status).toBe(200)
    await expect
      .poll(() =>
        listener.received.some(
          (r) => r.json?.operation === 'Rename' && r.json?.path === 'work/moved copy.bin',
        ),
      )
      .toBe(true)
  })

  it('locks: a write without the token is 423, with it passes, and UNLOCK frees the file', async () => {
    const lock = await curl([
      '-X',
      'LOCK',
      '-H',
      'Timeout: Second-60',
      '-H',
      'Content-Type: application/xml',
      '--data-binary',
      LOCKINFO,
      '-D',
      '-',
      url('work/file.bin'),
    ])
    expect(lock.status).toBe(200)
    const token = /lock-token: <(opaquelocktoken:[^>]+)>/i.exec(lock.body)?.[1]
    expect(token).toBeDefined()
    expect(lock.body).toContain('<D:href>curl</D:href>')
    const file = path.join(dir, 'file.bin')
    const refused = await curl(['-T', file, url('work/file.bin')])
    expect(refused.status).toBe(423)
    expect(refused.body).toContain('<D:lock-token-submitted>')
    expect((await curl(['-X', 'DELETE', url('work/file.bin')])).status).toBe(423)
    expect((await curl(['-T', file, '-H', `If: (<${token}>)`, url('work/file.bin')])).status).toBe(204)
    expect(
      (await curl(['-T', file, '-H', 'If: (<opaquelocktoken:not-it>)', url('work/file.bin')])).status,
    ).toBe(412)
    // Another user holding the token still cannot use it.
    const key = await makeKey(s, (await makeUser(s, { username: 'mallory' })).id)
    expect(
      (
        await curl(['-X', 'UNLOCK', '-H', `Lock-Token: <${token}>`, url('work/file.bin')], {
          user: `mallory:${key.key}`,
        })
      ).status,
    ).toBe(403)
    expect(
      (await curl(['-X', 'UNLOCK', '-H', 'Lock-Token: <opaquelocktoken:nope>', url('work/file.bin')])).status,
    ).toBe(409)
    expect((await curl(['-X', 'UNLOCK', '-H', `Lock-Token: <${token}>`, url('work/file.bin')])).status).toBe(
      204,
    )
    expect((await curl(['-T', file, url('work/file.bin')])).status).toBe(204)
  })

  it('takes Win32 times in PROPPATCH and refuses to change a live property', async () => {
    const win =
      '<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:schemas-microsoft-com:"><D:set><D:prop>' +
      '<Z:Win32LastModifiedTime>Wed, 25 Nov 2026 10:00:00 GMT</Z:Win32LastModifiedTime></D:prop></D:set></D:propertyupdate>'
    const ok = await curl(['-X', 'PROPPATCH', '--data-binary', win, url('work/file.bin')])
    expect(ok.status).toBe(207)
    expect(ok.body).toContain('HTTP/1.1 200 OK')
    const live = win.replace(/Z:Win32LastModifiedTime/g, 'D:getetag')
    const no = await curl(['-X', 'PROPPATCH', '--data-binary', live, url('work/file.bin')])
    expect(no.status).toBe(207)
    expect(no.body).toContain('HTTP/1.1 403 Forbidden')
    expect(
      (
        await curl([
          '-X',
          'PROPPATCH',
          '--data-binary',
          '<D:propertyupdate xmlns:D="DAV:">',
          url('work/file.bin'),
        ])
      ).status,
    ).toBe(400)
  })

  it('refuses writes where the user may only read, and paths that climb out', async () => {
    expect((await curl(['-o', '/dev/null', url('pub/notice.txt')])).status).toBe(200)
    expect((await curl(['-T', path.join(dir, 'file.bin'), url('pub/mine.bin')])).status).toBe(403)
    expect((await curl(['-X', 'DELETE', url('pub/notice.txt')])).status).toBe(403)
    expect(
      (await curl(['-X', 'MOVE', '-H', `Destination: ${url('work/stolen.txt')}`, url('pub/notice.txt')]))
        .status,
    ).toBe(403)
    expect((await curl(['-X', 'MKCOL', url('outside')])).status).toBe(403)
    expect((await curl(['-o', '/dev/null', url('work/../pub/notice.txt')])).status).toBe(400)
    expect((await curl(['-X', 'PROPFIND', '-H', 'Depth: 0', url('work/%2e%2e/')])).status).toBe(400)
  })

  it('deletes a folder with everything in it', async () => {
    expect((await curl(['-X', 'MKCOL', url('work/tree')])).status).toBe(201)
    expect((await curl(['-T', path.join(dir, 'file.bin'), url('work/tree/f.bin')])).status).toBe(201)
    expect((await curl(['-X', 'DELETE', url('work/tree/')])).status).toBe(204)
    expect((await curl(['-X', 'PROPFIND', '-H', 'Depth: 0', url('work/tree/')])).status).toBe(404)
  })
})
