import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startListener, type TestListener } from './helpers/listener.js'
import { call, dialects, grant, makeKey, makeUser, type TestUser } from './helpers/server.js'
import { run, type SftpTestServer, sftpBatch, sftpBatchWithKey, startSftpServer } from './helpers/sftp.js'

const md5 = (file: string) => crypto.createHash('md5').update(fs.readFileSync(file)).digest('hex')

/** The protocol of the notifications the listener got for a path, by operation. */
function notified(listener: TestListener, path: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const r of listener.received) if (r.json?.path === path) out[r.json.operation] = r.json.protocol
  return out
}

describe.each(dialects)('SFTP with real clients (%s)', (dialect) => {
  let s: SftpTestServer
  let listener: TestListener
  let alice: TestUser
  let dir: string
  let local: string

  beforeAll(async () => {
    s = await startSftpServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })
    listener = await startListener()
    const hooks = await call(s, 'PATCH', '/webhook_settings', {
      key: s.adminKey,
      body: {
        url: listener.url,
        triggers: ['Upload', 'Download', 'Rename', 'Move', 'Delete'],
        enabled: true,
      },
    })
    expect(hooks.status).toBe(200)
    alice = await makeUser(s, { username: 'alice' })
    for (const folder of ['inbox', 'other']) {
      expect((await call(s, 'POST', `/folders/${folder}`, { key: s.adminKey, body: {} })).status).toBe(201)
    }
    await grant(s, alice.id, 'inbox', 'full')
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wharf-sftp-'))
    local = path.join(dir, 'data.bin')
    fs.writeFileSync(local, crypto.randomBytes(700_000))
  })
  afterAll(async () => {
    await listener?.close()
    await s?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('uploads, lists, downloads, renames and deletes with OpenSSH’s sftp and a password', async () => {
    const back = path.join(dir, 'back.bin')
    const r = await sftpBatch(s.sftp.port, 'alice', alice.password, [
      'cd inbox',
      `put ${local} data.bin`,
      'ls -l',
      `get data.bin ${back}`,
      'mkdir sub',
      'rename data.bin sub/moved.bin',
      'rename sub/moved.bin sub/renamed.bin',
      'ls sub',
      'rm sub/renamed.bin',
      'rmdir sub',
    ])
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/-rw-r--r-- .* 700000 .* data\.bin/)
    expect(r.stdout).toContain('sub/renamed.bin')
    expect(md5(back)).toBe(md5(local))
    await expect
      .poll(() => notified(listener, 'inbox/data.bin'), { timeout: 10_000 })
      .toEqual({
        Upload: 'sftp',
        Download: 'sftp',
      })
    await expect
      .poll(() => notified(listener, 'inbox/sub/renamed.bin'), { timeout: 10_000 })
      .toEqual({
        Rename: 'sftp',
        Delete: 'sftp',
      })
    expect(notified(listener, 'inbox/sub/moved.bin')).toEqual({ Move: 'sftp' })

    // The history tells the same, with interface sftp.
    const history = await call(s, 'GET', '/history/files/inbox/data.bin', { key: s.adminKey })
    expect(history.status).toBe(200)
    expect(history.body.map((a: { action: string; interface: string }) => [a.action, a.interface])).toEqual(
      expect.arrayContaining([
        ['create', 'sftp'],
        ['read', 'sftp'],
      ]),
    )
    const logins = await call(s, 'GET', `/history/users/${alice.id}`, { key: s.adminKey })
    expect(logins.body).toContainEqual(expect.objectContaining({ action: 'login', interface: 'sftp' }))
  })

  it('refuses what the user’s folder permissions do not allow', async () => {
    const r = await sftpBatch(s.sftp.port, 'alice', alice.password, [`put ${local} /other/x.bin`])
    expect(r.code).not.toBe(0)
    expect(r.stderr).toMatch(/Permission denied/)
    const mk = await sftpBatch(s.sftp.port, 'alice', alice.password, ['mkdir /top'])
    expect(mk.code).not.toBe(0)
    expect(mk.stderr).toMatch(/Permission denied/)
    // The root shows only the way to the user's own folder.
    const ls = await sftpBatch(s.sftp.port, 'alice', alice.password, ['ls /'])
    expect(ls.code).toBe(0)
    expect(ls.stdout.split('\n').slice(1).join(' ').trim().split(/\s+/)).toEqual(['/inbox'])
    const get = await sftpBatch(s.sftp.port, 'alice', alice.password, [`get /nothing/here ${dir}/x`])
    expect(get.code).not.toBe(0)
    expect(get.stderr).toMatch(/not found|No such file|Permission denied/)
    expect((await call(s, 'GET', '/files/other/x.bin', { key: s.adminKey })).status).toBe(404)
  })

  it('logs in with a key added through the PublicKey API, and with an API key as the password', async () => {
    const keyFile = path.join(dir, 'id_ed25519')
    const gen = await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', keyFile])
    expect(gen.code).toBe(0)
    const mine = await makeKey(s, alice.id)
    const added = await call(s, 'POST', '/public_keys', {
      key: mine.key,
      body: { title: 'laptop', public_key: fs.readFileSync(`${keyFile}.pub`, 'utf8') },
    })
    expect(added.status, added.text).toBe(201)
    const r = await sftpBatchWithKey(s.sftp.port, 'alice', keyFile, [
      `put ${local} /inbox/by-key.bin`,
      'ls /inbox',
    ])
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    expect(r.stdout).toContain('by-key.bin')
    const shown = await call(s, 'GET', `/public_keys/${added.body.id}`, { key: mine.key })
    expect(shown.body.last_login_at).not.toBeNull()
    // Another user's name with alice's key: no.
    const bob = await makeUser(s, { username: 'bob' })
    const wrong = await sftpBatchWithKey(s.sftp.port, bob.username, keyFile, ['ls'])
    expect(wrong.code).not.toBe(0)
    expect(wrong.stderr).toMatch(/Permission denied/)

    const byApiKey = await sftpBatch(s.sftp.port, 'alice', mine.key, ['ls /inbox'])
    expect(byApiKey.code).toBe(0)
    expect(byApiKey.stdout).toContain('by-key.bin')
    // A key restricted to a folder is restricted over SFTP too.
    const restricted = await makeKey(s, alice.id, { path: 'inbox/only' })
    const outside = await sftpBatch(s.sftp.port, 'alice', restricted.key, [`put ${local} /inbox/x.bin`])
    expect(outside.code).not.toBe(0)
    expect(outside.stderr).toMatch(/Permission denied/)
  })

  it('downloads and uploads with curl’s sftp://', async () => {
    const base = `sftp://127.0.0.1:${s.sftp.port}/inbox`
    const user = ['-u', `alice:${alice.password}`, '--insecure', '-sS', '--max-time', '30']
    const up = await run('curl', [...user, '-T', local, `${base}/curl.bin`])
    expect(up.stderr).toBe('')
    expect(up.code).toBe(0)
    const back = path.join(dir, 'curl-back.bin')
    const down = await run('curl', [...user, '-o', back, `${base}/curl.bin`])
    expect(down.code).toBe(0)
    expect(md5(back)).toBe(md5(local))
    await expect
      .poll(() => notified(listener, 'inbox/curl.bin'), { timeout: 10_000 })
      .toEqual({
        Upload: 'sftp',
        Download: 'sftp',
      })
  })

  it('copies and checks a folder with rclone’s sftp backend', async () => {
    const src = path.join(dir, 'tree')
    fs.mkdirSync(path.join(src, 'nested'), { recursive: true })
    fs.writeFileSync(path.join(src, 'a.txt'), 'alpha\n')
    fs.writeFileSync(path.join(src, 'nested', 'b.bin'), crypto.randomBytes(200_000))
    fs.writeFileSync(path.join(src, 'empty'), '')
    const obscured = (await run('rclone', ['obscure', alice.password])).stdout.trim()
    const remote = `:sftp,host=127.0.0.1,port=${s.sftp.port},user=alice,pass=${obscured}:inbox/rc`
    const env = { RCLONE_CONFIG: path.join(dir, 'rclone.conf') }
    const copy = await run('rclone', ['copy', src, remote, '--contimeout', '10s', '--timeout', '30s'], {
      env,
      timeoutMs: 60_000,
    })
    expect(copy.stderr).not.toMatch(/ERROR/)
    expect(copy.code).toBe(0)
    // --download compares the bytes themselves (the server runs no md5sum command).
    const check = await run('rclone', ['check', src, remote, '--download'], { env, timeoutMs: 60_000 })
    expect(check.stderr).toMatch(/0 differences found/)
    expect(check.code).toBe(0)
    const listed = await call(s, 'GET', '/folders/inbox/rc/nested', { key: s.adminKey })
    expect(listed.body.map((f: { path: string; size: number }) => [f.path, f.size])).toEqual([
      ['inbox/rc/nested/b.bin', 200_000],
    ])
  })
})
