import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startListener, type TestListener } from './helpers/listener.js'
import { call, dialects, grant, makeKey, makeUser, type TestUser } from './helpers/server.js'
import { run, sftpBatch, sftpBatchWithKey, sshOptions, useSftpServer } from './helpers/sftp.js'

const md5 = (file: string) => crypto.createHash('md5').update(fs.readFileSync(file)).digest('hex')

/** The protocol of the notifications the listener got for a path, by operation. */
function notified(listener: TestListener, path: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const r of listener.received) if (r.json?.path === path) out[r.json.operation] = r.json.protocol
  return out
}

describe.each(dialects)('SFTP with real clients (%s)', (dialect) => {
  const s = useSftpServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })
  let listener: TestListener
  let alice: TestUser
  let dir: string
  let local: string

  beforeAll(async () => {
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
    for (const folder of ['inbox', 'other', 'seen']) {
      expect((await call(s, 'POST', `/folders/${folder}`, { key: s.adminKey, body: {} })).status).toBe(201)
    }
    await grant(s, alice.id, 'inbox', 'full')
    await grant(s, alice.id, 'seen', 'readonly')
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wharf-sftp-'))
    local = path.join(dir, 'data.bin')
    fs.writeFileSync(local, crypto.randomBytes(700_000))
  })
  afterAll(async () => {
    await listener?.close()
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
    expect(ls.stdout.split('\n').slice(1).join(' ').trim().split(/\s+/)).toEqual(['/inbox', '/seen'])
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

  it('copies a folder with rclone’s sftp backend, and a second copy transfers nothing', async () => {
    const src = path.join(dir, 'tree')
    fs.mkdirSync(path.join(src, 'nested'), { recursive: true })
    fs.writeFileSync(path.join(src, 'a.txt'), 'alpha\n')
    fs.writeFileSync(path.join(src, 'nested', 'b.bin'), crypto.randomBytes(200_000))
    fs.writeFileSync(path.join(src, 'empty'), '')
    fs.utimesSync(path.join(src, 'a.txt'), 1_000_000_000, 1_000_000_000)
    const remote = await rcloneRemote('inbox/rc')
    const first = await rclone(['copy', src, remote])
    expect(first.stderr).not.toMatch(/ERROR|SetModTime is not supported/)
    expect(first.code).toBe(0)
    expect(transfers(first.stderr)).toBe(3)
    // rclone set each file's time after its upload: it is the file's provided_mtime.
    const a = await call(s, 'GET', '/files/inbox/rc/a.txt', { key: s.adminKey })
    expect(a.body.provided_mtime).toBe('2001-09-09T01:46:40Z')
    const again = await rclone(['copy', src, remote])
    expect(again.code).toBe(0)
    expect(again.stderr).not.toMatch(/Copied/)
    expect(transfers(again.stderr)).toBe(0)
    const listed = await call(s, 'GET', '/folders/inbox/rc/nested', { key: s.adminKey })
    expect(listed.body.map((f: { path: string; size: number }) => [f.path, f.size])).toEqual([
      ['inbox/rc/nested/b.bin', 200_000],
    ])
  })

  it('answers rclone’s md5sum and sha1sum over SSH exec, so rclone check needs no download', async () => {
    const src = path.join(dir, 'tree')
    const remote = await rcloneRemote('inbox/rc')
    const check = await rclone(['check', src, remote])
    expect(check.stderr).not.toMatch(/No common hash/)
    expect(check.stderr).toMatch(/0 differences found/)
    expect(check.stderr).toMatch(/3 matching files/)
    expect(check.code).toBe(0)
    // rclone 1.60 probes the commands once per run, and its first concurrent hashes do not wait
    // for the probe: `rclone md5sum` names the commands, as the README's remote does.
    const named = remote.replace(':inbox/rc', ',md5sum_command=md5sum,sha1sum_command=sha1sum:inbox/rc')
    const sums = await rclone(['md5sum', named])
    expect(sums.code, sums.stderr).toBe(0)
    expect(sums.stdout.trim().split('\n').sort()).toEqual(
      [
        `${md5(path.join(src, 'a.txt'))}  a.txt`,
        `${md5(path.join(src, 'empty'))}  empty`,
        `${md5(path.join(src, 'nested', 'b.bin'))}  nested/b.bin`,
      ].sort(),
    )
    const sha1 = await rclone(['sha1sum', `${named}/a.txt`])
    expect(sha1.stdout).toBe(`${crypto.createHash('sha1').update('alpha\n').digest('hex')}  a.txt\n`)
  })

  it('runs only md5sum, sha1sum and sha256sum of one readable file over SSH exec', async () => {
    const sha256 = crypto.createHash('sha256').update('alpha\n').digest('hex')
    const name = "/inbox/odd name's.txt"
    const up = await sftpBatch(s.sftp.port, 'alice', alice.password, [`put ${dir}/tree/a.txt "${name}"`])
    expect(up.code).toBe(0)
    const quoted = await ssh(['sha256sum', "/inbox/odd\\ name\\'s.txt"])
    expect(quoted).toEqual({ code: 0, stdout: `${sha256}  /inbox/odd name's.txt\n`, stderr: '' })
    const single = await ssh(['md5sum', `'inbox/odd name'"'"'s.txt'`])
    expect(single.stdout).toBe(`${md5(path.join(dir, 'tree', 'a.txt'))}  inbox/odd name's.txt\n`)
    // The bare command hashes standard input, as rclone's probe expects.
    expect((await ssh(['md5sum'])).stdout).toBe('d41d8cd98f00b204e9800998ecf8427e  -\n')
    expect((await ssh(['sha1sum'], 'alpha\n')).stdout).toBe(
      `${crypto.createHash('sha1').update('alpha\n').digest('hex')}  -\n`,
    )
    // A file alice may not read, a folder, a missing file: exit status 1 and a message.
    const admin = await call(s, 'POST', '/folders/other/secret', { key: s.adminKey, body: {} })
    expect(admin.status).toBe(201)
    for (const p of ['/other/secret', '/inbox', '/inbox/missing.txt', '../inbox/rc/a.txt']) {
      const r = await ssh(['md5sum', p])
      expect(r.code, p).toBe(1)
      expect(r.stdout, p).toBe('')
      expect(r.stderr, p).toMatch(/^md5sum: /)
    }
    // Anything else is refused as a command: no output, no shell.
    for (const cmd of [
      ['ls'],
      ['md5sum', '/inbox/rc/a.txt', '/inbox/rc/empty'],
      ['md5sum', '-c', 'x'],
      ['md5sum', '/inbox/rc/a.txt;', 'ls'],
      ['md5sum', '$HOME'],
      ['md5sum', '/inbox/rc/*'],
      ['sha512sum', '/inbox/rc/a.txt'],
      ['md5sum /inbox/rc/a.txt | cat'],
    ]) {
      const r = await ssh(cmd)
      expect(r.code, cmd.join(' ')).not.toBe(0)
      expect(r.stdout, cmd.join(' ')).toBe('')
    }
  })

  it('keeps the times sftp put -p and curl’s mtime set, with write permission only', async () => {
    const old = path.join(dir, 'old.txt')
    fs.writeFileSync(old, 'old\n')
    fs.utimesSync(old, 946_684_800, 946_684_800)
    const r = await sftpBatch(s.sftp.port, 'alice', alice.password, [
      `put -p ${old} /inbox/old.txt`,
      'ls -l /inbox',
    ])
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/ 4 Jan {2}1 {2}2000 old\.txt/)
    const got = await call(s, 'GET', '/files/inbox/old.txt', { key: s.adminKey })
    expect(got.body.provided_mtime).toBe('2000-01-01T00:00:00Z')
    const user = ['-u', `alice:${alice.password}`, '--insecure', '-sS', '--max-time', '30']
    const base = `sftp://127.0.0.1:${s.sftp.port}`
    const touched = await run('curl', [
      ...user,
      '-Q',
      'mtime "Thu, 06 May 2010 07:08:09 GMT" /inbox/old.txt',
      `${base}/inbox/`,
    ])
    expect(touched.code, touched.stderr).toBe(0)
    const after = await call(s, 'GET', '/files/inbox/old.txt', { key: s.adminKey })
    expect(after.body.provided_mtime).toBe('2010-05-06T07:08:09Z')
    // The history and the listener hear of the upload only: a time is not a change of content.
    await expect
      .poll(() => notified(listener, 'inbox/old.txt'), { timeout: 10_000 })
      .toEqual({ Upload: 'sftp' })
    // Read-only: the time stays as it was.
    expect((await call(s, 'POST', '/folders/seen/dir', { key: s.adminKey, body: {} })).status).toBe(201)
    const refused = await run('curl', [
      ...user,
      '-Q',
      'mtime "Thu, 06 May 2010 07:08:09 GMT" /seen/dir',
      `${base}/seen/`,
    ])
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toMatch(/QUOT command failed|Permission denied/)
    const seen = await call(s, 'GET', '/folders/seen', { key: s.adminKey })
    expect(seen.body.map((f: { provided_mtime: string | null }) => f.provided_mtime)).toEqual([null])
  })

  /**
   * An rclone remote on alice's account, all on the command line, checking the host keys the way
   * the README says: ssh-keyscan's lines in a file of their own.
   */
  async function rcloneRemote(at: string): Promise<string> {
    const knownHosts = path.join(dir, 'known_hosts')
    if (!fs.existsSync(knownHosts)) {
      const scan = await run('ssh-keyscan', ['-T', '10', '-p', String(s.sftp.port), '127.0.0.1'])
      expect(scan.stdout.trim().split('\n')).toHaveLength(2)
      fs.writeFileSync(knownHosts, scan.stdout)
    }
    const obscured = (await run('rclone', ['obscure', alice.password])).stdout.trim()
    return `:sftp,host=127.0.0.1,port=${s.sftp.port},user=alice,pass=${obscured},known_hosts_file=${knownHosts}:${at}`
  }

  function rclone(args: string[]) {
    return run('rclone', [...args, '-v', '--contimeout', '10s', '--timeout', '30s'], {
      env: { RCLONE_CONFIG: path.join(dir, 'rclone.conf') },
      timeoutMs: 60_000,
    })
  }

  /** `ssh alice@… COMMAND` with OpenSSH: an exec channel. */
  function ssh(command: string[], input = '') {
    return run(
      'sshpass',
      [
        '-e',
        'ssh',
        ...sshOptions(s.sftp.port).map((o) => (o === '-P' ? '-p' : o)),
        '-o',
        'PubkeyAuthentication=no',
        'alice@127.0.0.1',
        ...command,
      ],
      { env: { SSHPASS: alice.password }, input, timeoutMs: 20_000 },
    )
  }
})

/** How many files rclone -v says it copied. */
const transfers = (log: string) => log.match(/: Copied \(/g)?.length ?? 0
