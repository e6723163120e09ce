import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { basic, dav } from './helpers/dav.js'
import { FtpControl, run as runTool, startFtpFront } from './helpers/ftp.js'
import {
  call,
  dialects,
  login,
  makeKey,
  makeUser,
  type TestUser,
  useServer,
  useStarted,
} from './helpers/server.js'
import { run, sshOptions, startSftpFront } from './helpers/sftp.js'
import { codeAt } from './helpers/totp.js'

const STEP = 30_000

describe.each(dialects)('two-factor sign-in over SFTP, FTP and WebDAV (%s)', (dialect) => {
  let offset = 0
  const now = () => Date.now() + offset
  const s = useServer(
    dialect,
    {
      DAV_AUTH_CACHE_SECONDS: '0',
      SFTP_PORT: '0',
      SFTP_HOST: '127.0.0.1',
      FTP_ENABLED: 'true',
      FTP_HOST: '127.0.0.1',
      FTP_PORT: '0',
    },
    { now },
  )
  const sftp = useStarted(`${dialect} SFTP front end`, () => startSftpFront(s))
  const ftp = useStarted(`${dialect} FTP front end`, () => startFtpFront(s))
  let dir: string
  let askpass: string

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-2fa-'))
    // OpenSSH asks this program for every secret (SSH_ASKPASS_REQUIRE=force): the password at
    // the password prompt, the code at keyboard-interactive's "Verification code:".
    askpass = path.join(dir, 'askpass')
    await fs.writeFile(
      askpass,
      `#!/bin/sh\ncase "$1" in\n  *Verification*) cat "${dir}/code" ;;\n  *) cat "${dir}/password" ;;\nesac\n`,
      { mode: 0o755 },
    )
  })
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true })
  })
  beforeEach(async () => {
    // Each test's codes are of steps no other test used.
    offset += 10 * 60_000
    await s.container.db.deleteFrom('login_failures').execute()
  })

  async function enrolled(): Promise<{ user: TestUser; uri: string }> {
    const user = await makeUser(s)
    const session = await login(s, user.username, user.password)
    const created = await call(s, 'POST', '/two_factor_authentication_methods', {
      session,
      body: { method_type: 'totp' },
    })
    const uri: string = created.body.otpauth_uri
    const ok = await call(s, 'PATCH', `/two_factor_authentication_methods/${created.body.id}`, {
      session,
      body: { otp: codeAt(uri, now()) },
    })
    expect(ok.status).toBe(200)
    offset += STEP
    return { user, uri }
  }

  /** OpenSSH's sftp with the password, then the code at the keyboard-interactive prompt. */
  async function sftpWithCode(user: TestUser, password: string, code: string) {
    await fs.writeFile(path.join(dir, 'password'), `${password}\n`)
    await fs.writeFile(path.join(dir, 'code'), `${code}\n`)
    return run(
      'sftp',
      [
        ...sshOptions(sftp.port),
        '-o',
        'PubkeyAuthentication=no',
        '-o',
        'PreferredAuthentications=password,keyboard-interactive',
        '-o',
        'NumberOfPasswordPrompts=1',
        '-o',
        'BatchMode=no',
        '-b',
        '-',
        `${user.username}@127.0.0.1`,
      ],
      { input: 'pwd\n', env: { SSH_ASKPASS: askpass, SSH_ASKPASS_REQUIRE: 'force', DISPLAY: ':0' } },
    )
  }

  const failedLogins = (username: string) =>
    s.container.db
      .selectFrom('actions')
      .select(['failure_type', 'interface'])
      .where('action', '=', 'failedlogin')
      .where('username', '=', username)
      .orderBy('id')
      .execute()

  it('SFTP: OpenSSH sends the password, then the code when keyboard-interactive asks for it', async () => {
    const { user, uri } = await enrolled()
    const code = codeAt(uri, now())
    const ok = await sftpWithCode(user, user.password, code)
    expect(ok).toMatchObject({ code: 0 })
    expect(ok.stdout).toContain('Remote working directory: /')
    // The same code again is refused, and so is a wrong one: failed logins of interface sftp.
    const again = await sftpWithCode(user, user.password, code)
    expect(again.code).not.toBe(0)
    offset += STEP
    const wrong = codeAt(uri, now()) === '123456' ? '654321' : '123456'
    expect((await sftpWithCode(user, user.password, wrong)).code).not.toBe(0)
    expect(await failedLogins(user.username)).toEqual([
      { failure_type: 'password_mismatch', interface: 'sftp' },
      { failure_type: 'password_mismatch', interface: 'sftp' },
    ])
    // A wrong password never reaches the code.
    expect((await sftpWithCode(user, 'wrong-password', codeAt(uri, now()))).code).not.toBe(0)
    expect((await failedLogins(user.username)).length).toBe(3)
    offset += STEP
    expect((await sftpWithCode(user, user.password, codeAt(uri, now()))).code).toBe(0)
  })

  it('FTP: the password followed by a colon and the code; without it or with a wrong one, 530', async () => {
    const { user, uri } = await enrolled()
    const pass = async (password: string) => {
      const c = await FtpControl.connect(ftp.address().port)
      try {
        expect((await c.send(`USER ${user.username}`)).code).toBe(331)
        return (await c.send(`PASS ${password}`)).code
      } finally {
        c.close()
      }
    }
    expect(await pass(user.password)).toBe(530)
    const wrong = codeAt(uri, now()) === '123456' ? '654321' : '123456'
    expect(await pass(`${user.password}:${wrong}`)).toBe(530)
    expect(await failedLogins(user.username)).toEqual([
      { failure_type: 'password_mismatch', interface: 'ftp' },
    ])
    // lftp, a real client, with the code after the password.
    const code = codeAt(uri, now())
    const r = await runTool('lftp', [
      '-c',
      `set ftp:ssl-allow false; set net:max-retries 1; set net:timeout 15; set cmd:fail-exit true; ` +
        `open -u ${user.username},${user.password}:${code} -p ${ftp.address().port} 127.0.0.1; quote PWD`,
    ])
    expect(r).toMatchObject({ code: 0, stderr: '' })
    expect(r.stdout).toContain('257')
    // Used once: the same code is refused.
    expect(await pass(`${user.password}:${code}`)).toBe(530)
  })

  it('WebDAV: the password alone is refused for such a user; an API key as the password works', async () => {
    const { user } = await enrolled()
    const propfind = (password: string) =>
      dav(s, 'PROPFIND', '/', { auth: basic(user.username, password), headers: { Depth: '0' } })
    expect((await propfind(user.password)).status).toBe(401)
    const key = await makeKey(s, user.id)
    expect((await propfind(key.key)).status).toBe(207)
    // The password with a code does not make a WebDAV password either.
    expect((await propfind(`${user.password}:123456`)).status).toBe(401)
  })

  it('refuses every protocol to a user who must enrol first and has not', async () => {
    const user = await makeUser(s)
    await call(s, 'PATCH', `/users/${user.id}`, { key: s.adminKey, body: { require_2fa: 'always_require' } })
    expect((await sftpWithCode(user, user.password, '000000')).code).not.toBe(0)
    const c = await FtpControl.connect(ftp.address().port)
    try {
      expect((await c.send(`USER ${user.username}`)).code).toBe(331)
      expect((await c.send(`PASS ${user.password}`)).code).toBe(530)
    } finally {
      c.close()
    }
    expect(
      (await dav(s, 'PROPFIND', '/', { auth: basic(user.username, user.password), headers: { Depth: '0' } }))
        .status,
    ).toBe(401)
    // Its sessions were ended with the refusals: none is left behind.
    const left = await s.container.db
      .selectFrom('sessions')
      .select('id_hash')
      .where('user_id', '=', user.id)
      .execute()
    expect(left).toEqual([])
  })
})
