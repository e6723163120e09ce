import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { basic, dav, historyInterfaces, hookTo, md5, runClient, uploadsOf } from './helpers/dav.js'
import { startListener, type TestListener } from './helpers/listener.js'
import { dialects, grant, makeUser, useServer } from './helpers/server.js'

/** cadaver, the command-line WebDAV client, scripted through its standard input. */
describe.each(dialects)('WebDAV with cadaver (%s)', (dialect) => {
  let listener: TestListener
  let home: string

  /** One cadaver session running `commands`; credentials come from ~/.netrc, as cadaver reads them. */
  const cadaver = (commands: string[]) =>
    runClient('cadaver', [`${s.url}/dav/`], {
      env: { HOME: home },
      cwd: home,
      input: `${[...commands, 'quit'].join('\n')}\n`,
      timeoutMs: 30_000,
    })

  const s = useServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })
  beforeAll(async () => {
    listener = await startListener()
    await hookTo(s, listener)
    const u = await makeUser(s, { username: 'cora' })
    await grant(s, u.id, 'box', 'full')
    expect((await dav(s, 'MKCOL', '/box', { auth: basic('admin', 'admin-password-1') })).status).toBe(201)
    home = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-cadaver-'))
    await fs.writeFile(path.join(home, '.netrc'), `machine 127.0.0.1\nlogin cora\npassword ${u.password}\n`, {
      mode: 0o600,
    })
    await fs.writeFile(path.join(home, 'data.bin'), crypto.randomBytes(200_000))
  })
  afterAll(async () => {
    await listener?.close()
    if (home) await fs.rm(home, { recursive: true, force: true })
  })

  it('makes a folder, puts, lists, gets the same bytes, moves, locks and deletes', async () => {
    const r = await cadaver([
      'cd box',
      'mkcol in',
      'cd in',
      'put data.bin',
      'ls',
      'get data.bin back.bin',
      'move data.bin moved.bin',
      'lock moved.bin',
      'unlock moved.bin',
      'ls',
    ])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain("Creating `in': succeeded.")
    expect(r.stdout).toMatch(/Uploading data\.bin to `\/dav\/box\/in\/data\.bin': .*succeeded\./)
    expect(r.stdout).toMatch(/data\.bin\s+200000/)
    expect(r.stdout).toContain("Moving `/dav/box/in/data.bin' to `/dav/box/in/moved.bin':  succeeded.")
    expect(r.stdout).toContain("Locking `moved.bin': succeeded.")
    expect(r.stdout).toContain("Unlocking `moved.bin': succeeded.")
    expect(r.stdout).toMatch(/moved\.bin\s+200000/)
    expect(md5(await fs.readFile(path.join(home, 'back.bin')))).toBe(
      md5(await fs.readFile(path.join(home, 'data.bin'))),
    )

    await expect.poll(() => uploadsOf(listener, 'box/in/data.bin').length, { timeout: 10_000 }).toBe(1)
    expect(uploadsOf(listener, 'box/in/data.bin')[0]!.json).toMatchObject({
      protocol: 'dav',
      username: 'cora',
    })
    expect(await historyInterfaces(s, 'box/in/data.bin')).toContain('dav')

    const d = await cadaver(['cd box/in', 'delete moved.bin', 'ls'])
    expect(d.stdout).toContain("Deleting `moved.bin': succeeded.")
    expect(d.stdout).toContain('collection is empty')
  })

  it('is refused outside its folder permissions', async () => {
    const r = await cadaver(['put data.bin', 'mkcol other'])
    expect(r.stdout).toMatch(/Uploading data\.bin to `\/dav\/data\.bin': .*failed:\s*403 Forbidden/s)
    expect(r.stdout).toMatch(/Creating `other': failed:\s*403 Forbidden/)
  })
})
