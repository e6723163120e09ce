import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { run as runClient, startSftpAndFtpServer } from './helpers/ftp.js'
import {
  call,
  dialects,
  grant,
  login,
  makeKey,
  makeUser,
  type TestUser,
  useStarted,
} from './helpers/server.js'
import { run as runSsh, sftpBatch, sftpBatchWithKey } from './helpers/sftp.js'

const REAUTH = 'X-Service-Reauthentication'

/**
 * A user who must change their password (flagged, or expired) cannot do it over SFTP, FTP or
 * WebDAV: those password logins fail like a wrong password, each recorded as a `failedlogin`
 * with failure_type `expired_access`; API keys still work, and the change through the API frees
 * the protocols again.
 */
describe.each(dialects)('password change required on the transfer protocols (%s)', (dialect) => {
  const s = useStarted(`${dialect} SFTP + FTP + WebDAV server`, () => startSftpAndFtpServer(dialect))

  const lftp = (u: { username: string; password: string }) =>
    runClient('lftp', [
      '-c',
      'set ftp:ssl-allow false; set net:max-retries 1; set net:timeout 15; set cmd:fail-exit true; ' +
        `open -u ${u.username},${u.password} -p ${s.ftpPort} 127.0.0.1; ls /${u.username}`,
    ])
  const dav = async (u: { username: string; password: string }) => {
    const r = await runClient('curl', [
      '-sS',
      '-u',
      `${u.username}:${u.password}`,
      '-X',
      'PROPFIND',
      '-H',
      'Depth: 0',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      `${s.url}/dav/`,
    ])
    return Number(r.stdout)
  }
  const failures = (u: TestUser) =>
    s.container.db
      .selectFrom('actions')
      .select(['interface', 'failure_type', 'display'])
      .where('action', '=', 'failedlogin')
      .where('user_id', '=', u.id)
      .orderBy('id')
      .execute()

  /** A user with a folder of their own (named after them), to list once logged in. */
  const userWithFolder = async () => {
    const u = await makeUser(s)
    expect((await call(s, 'POST', `/folders/${u.username}`, { key: s.adminKey, body: {} })).status).toBe(201)
    await grant(s, u.id, u.username, 'full')
    return u
  }

  it('refuses SFTP, FTP and WebDAV password logins of a flagged user, recording expired_access', async () => {
    const u = await userWithFolder()
    expect((await sftpBatch(s.sftp.port, u.username, u.password, ['pwd'], { onePrompt: true })).code).toBe(0)
    const set = await call(s, 'PATCH', `/users/${u.id}`, {
      key: s.adminKey,
      body: { require_password_change: true },
    })
    expect(set.status).toBe(200)

    const sftp = await sftpBatch(s.sftp.port, u.username, u.password, ['pwd'], { onePrompt: true })
    expect(sftp.code).not.toBe(0)
    expect(sftp.stderr).toMatch(/Permission denied/)
    const ftp = await lftp(u)
    expect(ftp.code).not.toBe(0)
    expect(ftp.stderr).toMatch(/Login failed|530/)
    expect(await dav(u)).toBe(401)

    const recorded = await failures(u)
    for (const iface of ['sftp', 'ftp', 'dav']) {
      const mine = recorded.filter((a) => a.interface === iface)
      expect(mine.length).toBeGreaterThanOrEqual(1)
      for (const a of mine) {
        expect(a.failure_type).toBe('expired_access')
        expect(a.display).toBe(`Failed login for ${u.username} (expired_access: password change required)`)
      }
    }

    // An API key is its own credential, also as a protocol password.
    const key = (await makeKey(s, u.id)).key
    const byKey = await lftp({ username: u.username, password: key })
    expect(byKey.stderr).toBe('')
    expect(byKey.code).toBe(0)

    // So is an SSH key registered for the user.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wharf-pw-'))
    try {
      const keyFile = path.join(dir, 'id_ed25519')
      expect((await runSsh('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', keyFile])).code).toBe(0)
      const added = await call(s, 'POST', '/public_keys', {
        key,
        body: { title: 'laptop', public_key: fs.readFileSync(`${keyFile}.pub`, 'utf8') },
      })
      expect(added.status).toBe(201)
      const byPublicKey = await sftpBatchWithKey(s.sftp.port, u.username, keyFile, [`ls /${u.username}`])
      expect(byPublicKey.stderr).toBe('')
      expect(byPublicKey.code).toBe(0)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }

    // The change, made through the API, frees the protocols.
    const session = await login(s, u.username, u.password)
    const changed = await call(s, 'PATCH', `/users/${u.id}`, {
      session,
      body: { password: 'changed-at-last-1' },
      headers: { [REAUTH]: `password:${u.password}` },
    })
    expect(changed.status).toBe(200)
    const fresh = { username: u.username, password: 'changed-at-last-1' }
    expect((await sftpBatch(s.sftp.port, fresh.username, fresh.password, ['pwd'])).code).toBe(0)
    expect((await lftp(fresh)).code).toBe(0)
    expect(await dav(fresh)).toBe(207)
  })

  it('refuses an expired password on SFTP and FTP, saying so in the history', async () => {
    const u = await userWithFolder()
    await call(s, 'PATCH', `/users/${u.id}`, { key: s.adminKey, body: { password_validity_days: 7 } })
    await s.container.db
      .updateTable('users')
      .set({ password_set_at: Date.now() - 8 * 86_400_000 })
      .where('id', '=', u.id)
      .execute()
    expect(
      (await sftpBatch(s.sftp.port, u.username, u.password, ['pwd'], { onePrompt: true })).code,
    ).not.toBe(0)
    expect((await lftp(u)).code).not.toBe(0)
    const recorded = await failures(u)
    // What was recorded, in the failure's message when one is not as expected.
    const told = JSON.stringify(recorded)
    expect(recorded.map((a) => a.interface)).toEqual(expect.arrayContaining(['sftp', 'ftp']))
    for (const a of recorded) {
      expect(a.failure_type, told).toBe('expired_access')
      expect(a.display).toBe(`Failed login for ${u.username} (expired_access: password expired)`)
    }
    // A wrong password is still a wrong password.
    expect((await sftpBatch(s.sftp.port, u.username, 'not-the-password', ['pwd'])).code).not.toBe(0)
    expect((await failures(u)).at(-1)?.failure_type).toBe('password_mismatch')
  })
})
