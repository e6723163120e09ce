import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import ssh2 from 'ssh2'
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import type { FtpServer } from '../src/ftp/ftp-server.js'
import type { SftpServer } from '../src/sftp/sftp-server.js'
import { basic, dav } from './helpers/dav.js'
import { FtpControl, startFtpFront } from './helpers/ftp.js'
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  call,
  dialects,
  expectError,
  makeKey,
  makeUser,
  type TestServer,
  type TestUser,
  useServer,
  useStarted,
} from './helpers/server.js'
import {
  type ProcessSite,
  processSite,
  type ServerProcesses,
  serverProcesses,
} from './helpers/server-process.js'
import { run, sshKeyPair, startSftpFront } from './helpers/sftp.js'

const MINUTE = 60_000
const BANNED = 'too many failed logins, try again in 15 minutes'

interface World {
  s: TestServer
  sftp: SftpServer
  sftpPort: number
  ftp: FtpServer
  ftpPort: number
}

/** An SSH login with ssh2: whether it got in (then it hangs up), and any banner it was shown. */
function sshLogin(port: number, auth: { username: string; password?: string; privateKey?: string }) {
  return new Promise<{ ok: boolean; banner: string }>((resolve) => {
    const client = new ssh2.Client()
    let banner = ''
    let ok = false
    client.on('banner', (text) => {
      banner += text
    })
    client.once('ready', () => {
      ok = true
      client.end()
    })
    client.on('error', () => undefined)
    client.once('close', () => resolve({ ok, banner }))
    client.connect({ host: '127.0.0.1', port, readyTimeout: 10_000, ...auth })
  })
}

/** USER and PASS on a new FTP connection: the reply to PASS. */
async function ftpLogin(port: number, username: string, password: string, localAddress = '127.0.0.1') {
  const c = await FtpControl.connect(port, localAddress)
  try {
    expect((await c.send(`USER ${username}`)).code).toBe(331)
    return await c.send(`PASS ${password}`)
  } finally {
    c.close()
  }
}

const restLogin = (s: TestServer, username: string, password: string, web = false) =>
  call(s, 'POST', '/sessions', {
    body: { username, password },
    ...(web ? { headers: { 'X-Wharf-Interface': 'web' } } : {}),
  })

/** POST /sessions from another loopback address (the server sees the injected remote address). */
const restLoginFrom = (s: TestServer, remoteAddress: string, username: string, password: string) =>
  s.app.inject({
    method: 'POST',
    url: '/api/rest/v1/sessions',
    remoteAddress,
    payload: { username, password },
  })

const propfind = (s: TestServer, username: string, password: string) =>
  dav(s, 'PROPFIND', '/', { auth: basic(username, password), headers: { Depth: '0' } })

describe.each(dialects)('the login defender (%s)', (dialect) => {
  let w: World
  let offset = 0
  let user: TestUser

  const s = useServer(
    dialect,
    {
      LOGIN_DEFENDER_THRESHOLD: '6',
      LOGIN_DEFENDER_SAFE_LIST: '127.0.0.2/32',
      // The limit that counted successful logins: now ignored (it would refuse the scenario below).
      LOGIN_MAX_ATTEMPTS_PER_IP: '30',
      // Every WebDAV request is a login of its own.
      DAV_AUTH_CACHE_SECONDS: '0',
      SFTP_PORT: '0',
      SFTP_HOST: '127.0.0.1',
      FTP_ENABLED: 'true',
      FTP_HOST: '127.0.0.1',
      FTP_PORT: '0',
    },
    { now: () => Date.now() + offset },
  )
  const sftp = useStarted(`${dialect} SFTP front end`, () => startSftpFront(s))
  const ftp = useStarted(`${dialect} FTP front end`, () => startFtpFront(s))
  beforeAll(async () => {
    w = { s, sftp, sftpPort: sftp.port, ftp, ftpPort: ftp.address().port }
    user = await makeUser(s)
  })

  beforeEach(async () => {
    offset = 0
    await s.container.db.deleteFrom('login_failures').execute()
    await s.container.db.deleteFrom('banned_addresses').execute()
  })

  const failureRows = () => s.container.db.selectFrom('login_failures').selectAll().orderBy('id').execute()
  const bans = () => s.container.db.selectFrom('banned_addresses').selectAll().execute()

  /** Six failed REST logins from 127.0.0.1: the address is banned. */
  async function ban() {
    for (let i = 0; i < 6; i++) expect((await restLogin(s, user.username, 'wrong-password')).status).toBe(401)
    expect((await bans()).map((b) => b.address)).toEqual(['127.0.0.1'])
  }

  it('lets many successful protocol logins and two failures from one address through, then the admin signs in', async () => {
    for (let i = 0; i < 10; i++) expect((await sshLogin(w.sftpPort, { ...user })).ok).toBe(true)
    for (let i = 0; i < 10; i++)
      expect((await ftpLogin(w.ftpPort, user.username, user.password)).code).toBe(230)
    for (let i = 0; i < 9; i++) expect((await propfind(s, user.username, user.password)).status).toBe(207)
    expect((await sshLogin(w.sftpPort, { username: user.username, password: 'wrong' })).ok).toBe(false)
    expect((await ftpLogin(w.ftpPort, user.username, 'wrong')).code).toBe(530)

    expect((await restLogin(s, ADMIN_USERNAME, ADMIN_PASSWORD)).status).toBe(201)
    expect((await restLogin(s, ADMIN_USERNAME, ADMIN_PASSWORD, true)).status).toBe(201)
    expect((await failureRows()).map((r) => r.kind)).toEqual(['password_mismatch', 'password_mismatch'])
    expect(await bans()).toEqual([])
  }, 60_000)

  it('scores failures of every front end together and bans the address at the threshold', async () => {
    // A user of its own: the per-user lockout (5 failures) must not get in the way.
    const u = await makeUser(s)
    const first = await s.container.db
      .selectFrom('actions')
      .select((eb) => eb.fn.max('id').as('id'))
      .executeTakeFirstOrThrow()
    const { public: pub, private: priv } = sshKeyPair()
    const stranger = sshKeyPair()
    expect(
      (
        await call(s, 'POST', '/public_keys', {
          key: s.adminKey,
          body: { title: 'k', public_key: pub, user_id: u.id },
        })
      ).status,
    ).toBe(201)

    expectError(
      await restLogin(s, u.username, 'wrong'),
      401,
      'not-authenticated/invalid-username-or-password',
    )
    expectError(
      await restLogin(s, 'nobody-here', 'wrong', true),
      401,
      'not-authenticated/invalid-username-or-password',
    )
    expect((await ftpLogin(w.ftpPort, u.username, 'wrong')).code).toBe(530)
    expect((await sshLogin(w.sftpPort, { username: u.username, password: 'wrong' })).ok).toBe(false)
    // A connection whose only key is refused is one failure, scored when it closes.
    expect((await sshLogin(w.sftpPort, { username: u.username, privateKey: stranger.private })).ok).toBe(
      false,
    )
    await vi.waitFor(async () => expect(await failureRows()).toHaveLength(5))
    expect((await failureRows()).map((r) => r.kind)).toEqual([
      'password_mismatch',
      'username_not_found',
      'password_mismatch',
      'password_mismatch',
      'key_mismatch',
    ])
    // Below the threshold every login still works.
    expect((await restLogin(s, ADMIN_USERNAME, ADMIN_PASSWORD)).status).toBe(201)

    expect((await propfind(s, u.username, 'wrong')).status).toBe(401)
    const [row] = await bans()
    expect(row).toMatchObject({ address: '127.0.0.1', failures: 6 })
    expect(row!.banned_until - row!.banned_at).toBe(15 * MINUTE)
    expect(await failureRows()).toEqual([])

    // While banned, the right password is refused everywhere, and refusals are not scored.
    const rest = await restLogin(s, ADMIN_USERNAME, ADMIN_PASSWORD)
    expectError(rest, 429, 'rate-limited/too-many-login-attempts')
    expect(rest.body.error).toBe(`T${BANNED.slice(1)}`)
    const retry = Number(rest.headers.get('retry-after'))
    expect(retry).toBeGreaterThan(15 * 60 - 5)
    expect(retry).toBeLessThanOrEqual(15 * 60)
    expectError(await restLogin(s, u.username, u.password, true), 429, 'rate-limited/too-many-login-attempts')
    expect((await ftpLogin(w.ftpPort, u.username, u.password)).text).toBe(`421 ${BANNED}\r\n`)
    const apiKey = await makeKey(s, u.id)
    expect((await ftpLogin(w.ftpPort, u.username, apiKey.key)).text).toBe(`421 ${BANNED}\r\n`)
    expect(await sshLogin(w.sftpPort, { ...user })).toEqual({ ok: false, banner: `${BANNED}\r\n` })
    expect(await sshLogin(w.sftpPort, { username: u.username, privateKey: priv })).toEqual({
      ok: false,
      banner: `${BANNED}\r\n`,
    })
    // OpenSSH prints the banner: the user reads why, not just "Permission denied".
    const keyFile = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-key-')), 'id_ed25519')
    await fs.writeFile(keyFile, priv, { mode: 0o600 })
    const openssh = await run('sftp', [
      ...['-o', 'LogLevel=INFO', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null'],
      ...['-o', 'IdentityAgent=none', '-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes', '-i', keyFile],
      ...['-P', String(w.sftpPort), '-b', '-', `${u.username}@127.0.0.1`],
    ])
    await fs.rm(path.dirname(keyFile), { recursive: true, force: true })
    expect(openssh.code).not.toBe(0)
    expect(openssh.stderr).toContain(BANNED)
    const d = await propfind(s, u.username, u.password)
    expect(d.status).toBe(429)
    expect(Number(d.headers.get('retry-after'))).toBeGreaterThan(15 * 60 - 5)
    expect(await failureRows()).toEqual([])

    // Every failure is still a failedlogin Action of its front end (the refused key's too).
    const actions = await s.container.db
      .selectFrom('actions')
      .select(['interface', 'failure_type'])
      .where('action', '=', 'failedlogin')
      .where('id', '>', Number(first.id))
      .orderBy('id')
      .execute()
    expect(actions).toEqual([
      { interface: 'restapi', failure_type: 'password_mismatch' },
      { interface: 'web', failure_type: 'username_not_found' },
      { interface: 'ftp', failure_type: 'password_mismatch' },
      { interface: 'sftp', failure_type: 'password_mismatch' },
      { interface: 'sftp', failure_type: 'key_mismatch' },
      { interface: 'dav', failure_type: 'password_mismatch' },
    ])
  }, 60_000)

  it('ends a ban after LOGIN_DEFENDER_BAN_MINUTES, and the address starts afresh', async () => {
    await ban()
    offset = 14 * MINUTE
    expect((await restLogin(s, ADMIN_USERNAME, ADMIN_PASSWORD)).status).toBe(429)
    offset = 15 * MINUTE + 1000
    expect((await restLogin(s, ADMIN_USERNAME, ADMIN_PASSWORD)).status).toBe(201)
    // The failures behind the ban are gone with it: one more is a wrong password, not a new ban.
    expect((await restLogin(s, user.username, 'wrong')).status).toBe(401)
    expect((await restLogin(s, ADMIN_USERNAME, ADMIN_PASSWORD)).status).toBe(201)
  })

  it('counts only failures within LOGIN_DEFENDER_WINDOW_MINUTES', async () => {
    for (let i = 0; i < 5; i++) expect((await restLogin(s, user.username, 'wrong')).status).toBe(401)
    offset = 15 * MINUTE + 1000
    expect((await restLogin(s, user.username, 'wrong')).status).toBe(401)
    expect(await bans()).toEqual([])
    // The five outside the window were pruned by the sixth failure.
    expect(await failureRows()).toHaveLength(1)
    expect((await restLogin(s, ADMIN_USERNAME, ADMIN_PASSWORD)).status).toBe(201)
  })

  it('never scores or bans an address on LOGIN_DEFENDER_SAFE_LIST', async () => {
    for (let i = 0; i < 7; i++) {
      expect((await restLoginFrom(s, '127.0.0.2', user.username, 'wrong')).statusCode).toBe(401)
    }
    expect((await ftpLogin(w.ftpPort, user.username, 'wrong', '127.0.0.2')).code).toBe(530)
    expect((await restLoginFrom(s, '127.0.0.2', ADMIN_USERNAME, ADMIN_PASSWORD)).statusCode).toBe(201)
    expect(await failureRows()).toEqual([])
    expect(await bans()).toEqual([])
    // The same failures from an address not on the list ban it.
    for (let i = 0; i < 6; i++) {
      expect((await restLoginFrom(s, '127.0.0.3', user.username, 'wrong')).statusCode).toBe(401)
    }
    expect((await restLoginFrom(s, '127.0.0.3', ADMIN_USERNAME, ADMIN_PASSWORD)).statusCode).toBe(429)
    expect((await bans()).map((b) => b.address)).toEqual(['127.0.0.3'])
  })

  describe('GET and DELETE /banned_addresses', () => {
    it('lists the bans still running for site admins, in JSON and XML, with cursor paging', async () => {
      await ban()
      const now = Date.now()
      await s.container.db
        .insertInto('banned_addresses')
        .values([
          {
            site_id: s.container.site.id,
            address: '2001:db8::1',
            banned_at: now,
            banned_until: now + MINUTE,
            failures: 20,
          },
          {
            site_id: s.container.site.id,
            address: '192.0.2.9',
            banned_at: now - 2 * MINUTE,
            banned_until: now - MINUTE,
            failures: 20,
          },
        ])
        .execute()
      const r = await call(s, 'GET', '/banned_addresses', { key: s.adminKey })
      expect(r.status).toBe(200)
      expect(r.body).toEqual([
        {
          address: '127.0.0.1',
          banned_at: expect.any(String),
          banned_until: expect.any(String),
          failures: 6,
        },
        {
          address: '2001:db8::1',
          banned_at: expect.any(String),
          banned_until: expect.any(String),
          failures: 20,
        },
      ])
      expect(Date.parse(r.body[0].banned_until) - Date.parse(r.body[0].banned_at)).toBe(15 * MINUTE)

      const first = await call(s, 'GET', '/banned_addresses?per_page=1', { key: s.adminKey })
      expect(first.body.map((b: any) => b.address)).toEqual(['127.0.0.1'])
      const cursor = first.headers.get('x-files-cursor-next')!
      const second = await call(
        s,
        'GET',
        `/banned_addresses?per_page=1&cursor=${encodeURIComponent(cursor)}`,
        {
          key: s.adminKey,
        },
      )
      expect(second.body.map((b: any) => b.address)).toEqual(['2001:db8::1'])
      expect(second.headers.get('x-files-cursor-next')).toBeNull()

      const xml = await call(s, 'GET', '/banned_addresses.xml', { key: s.adminKey })
      expect(xml.status).toBe(200)
      expect(xml.text).toContain('<banned-addresses')
      expect(xml.text).toMatch(/<banned-address>\s*<address>127\.0\.0\.1<\/address>\s*<banned_at>/)
      const json = await call(s, 'GET', '/banned_addresses.json', { key: s.adminKey })
      expect(json.body).toEqual(r.body)
    })

    it('lifts a ban and forgets the failures behind it; IPv6 in any spelling', async () => {
      await ban()
      const r = await call(s, 'DELETE', '/banned_addresses/127.0.0.1', { key: s.adminKey })
      expect(r.status).toBe(204)
      expect(r.text).toBe('')
      expect((await restLogin(s, ADMIN_USERNAME, ADMIN_PASSWORD)).status).toBe(201)
      expect((await restLogin(s, user.username, 'wrong')).status).toBe(401)
      expect((await restLogin(s, ADMIN_USERNAME, ADMIN_PASSWORD)).status).toBe(201)

      const now = Date.now()
      await s.container.db
        .insertInto('banned_addresses')
        .values({
          site_id: s.container.site.id,
          address: '2001:db8::1',
          banned_at: now,
          banned_until: now + MINUTE,
          failures: 6,
        })
        .execute()
      expect(
        (await call(s, 'DELETE', '/banned_addresses/2001:DB8:0:0:0:0:0:1', { key: s.adminKey })).status,
      ).toBe(204)
      expect(await bans()).toEqual([])
    })

    it('answers 404 for an address that is not banned and 400 for one that is not an address', async () => {
      expectError(
        await call(s, 'DELETE', '/banned_addresses/192.0.2.1', { key: s.adminKey }),
        404,
        'not-found',
      )
      expectError(await call(s, 'DELETE', '/banned_addresses/::1', { key: s.adminKey }), 404, 'not-found')
      for (const bad of ['example.com', '127.1', '300.0.0.1', '2001:db8::1::2', '127.0.0.1%2F32']) {
        expectError(
          await call(s, 'DELETE', `/banned_addresses/${bad}`, { key: s.adminKey }),
          400,
          'bad-request/request-params-invalid',
        )
      }
    })

    it('refuses users who are not site admins', async () => {
      const key = await makeKey(s, user.id)
      await ban()
      expectError(
        await call(s, 'GET', '/banned_addresses', { key: key.key }),
        403,
        'not-authorized/site-admin-required',
      )
      expectError(
        await call(s, 'DELETE', '/banned_addresses/127.0.0.1', { key: key.key }),
        403,
        'not-authorized/site-admin-required',
      )
      expect(await bans()).toHaveLength(1)
    })
  })
})

describe.each(dialects)('wharf banned-addresses (%s)', (dialect) => {
  let servers: ServerProcesses
  let site: ProcessSite
  beforeAll(async () => {
    servers = serverProcesses()
    site = await processSite(servers, dialect)
  }, 60_000)
  afterAll(async () => {
    await servers?.killAll()
    await site?.remove()
  })

  const wharf = async (...args: string[]) => {
    try {
      const r = await servers.wharf(['banned-addresses', ...args], site.env())
      return { code: 0, stdout: r.stdout, stderr: r.stderr }
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string }
      return { code: e.code, stdout: e.stdout, stderr: e.stderr }
    }
  }

  it('lists the running bans and lifts one; refuses an address that is not banned or not an address', async () => {
    const siteId = (await site.db.db.selectFrom('sites').select('id').executeTakeFirstOrThrow()).id
    const now = Date.now()
    await site.db.db
      .insertInto('banned_addresses')
      .values([
        {
          site_id: siteId,
          address: '192.0.2.7',
          banned_at: now,
          banned_until: now + 15 * MINUTE,
          failures: 20,
        },
        {
          site_id: siteId,
          address: '2001:db8::1',
          banned_at: now,
          banned_until: now + 15 * MINUTE,
          failures: 21,
        },
        {
          site_id: siteId,
          address: '192.0.2.8',
          banned_at: now - 30 * MINUTE,
          banned_until: now - MINUTE,
          failures: 20,
        },
      ])
      .execute()
    await site.db.db
      .insertInto('login_failures')
      .values({ site_id: siteId, address: '2001:db8::1', kind: 'password_mismatch', created_at: now })
      .execute()

    const listed = await wharf('list')
    expect(listed.code).toBe(0)
    expect(JSON.parse(listed.stdout)).toEqual([
      { address: '192.0.2.7', banned_at: expect.any(String), banned_until: expect.any(String), failures: 20 },
      {
        address: '2001:db8::1',
        banned_at: expect.any(String),
        banned_until: expect.any(String),
        failures: 21,
      },
    ])

    expect(await wharf('delete', '2001:DB8::0:1')).toEqual({
      code: 0,
      stdout: 'lifted the ban of 2001:DB8::0:1\n',
      stderr: '',
    })
    expect(JSON.parse((await wharf('list')).stdout).map((b: { address: string }) => b.address)).toEqual([
      '192.0.2.7',
    ])
    expect(await site.db.db.selectFrom('login_failures').selectAll().execute()).toEqual([])

    const unknown = await wharf('delete', '192.0.2.8')
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toBe('error: not-found: Address 192.0.2.8 is not banned\n')
    const bad = await wharf('delete', 'example.com')
    expect(bad.code).toBe(1)
    expect(bad.stderr).toBe(
      'error: bad-request/request-params-invalid: address must be an IPv4 or IPv6 address\n',
    )
  }, 60_000)
})
