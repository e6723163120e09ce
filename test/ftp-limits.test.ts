import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import selfsigned from 'selfsigned'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config.js'
import { FtpServer, type FtpServerDeps } from '../src/ftp/ftp-server.js'
import { loadFtpTls } from '../src/ftp/ftp-tls.js'
import { FtpControl, run, useFtpWorld } from './helpers/ftp.js'
import { dialects, grant, makeUser, type TestUser } from './helpers/server.js'

describe.each(dialects)('FTP_REQUIRE_TLS (%s)', (dialect) => {
  const w = useFtpWorld(dialect, { FTP_REQUIRE_TLS: 'true' })
  let file: string

  beforeAll(async () => {
    file = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-ftp-tls-')), 'a.txt')
    await fs.writeFile(file, 'secret\n')
  })
  afterAll(async () => {
    if (file) await fs.rm(path.dirname(file), { recursive: true, force: true })
  })

  it('refuses a plain-text login with 530 and a message saying to use TLS', async () => {
    const c = await FtpControl.connect(w.s.ftpPort)
    try {
      const user = await c.send(`USER ${w.user.username}`)
      expect(user.code).toBe(530)
      expect(user.text).toContain('requires TLS')
      expect((await c.send(`PASS ${w.user.password}`)).code).toBe(530)
      expect((await c.send('LIST')).code).toBe(530)
    } finally {
      c.close()
    }
    const plain = await run('curl', [
      '-sS',
      '-u',
      `${w.user.username}:${w.user.password}`,
      `ftp://127.0.0.1:${w.s.ftpPort}/`,
    ])
    expect(plain.code).toBe(67)
  })

  it('logs in over explicit TLS, and refuses clear-text data connections', async () => {
    const u = `${w.user.username}:${w.user.password}`
    const url = `ftp://127.0.0.1:${w.s.ftpPort}/partner/a.txt`
    expect(await run('curl', ['-sS', '--ssl-reqd', '-k', '-u', u, '-T', file, url])).toMatchObject({
      code: 0,
    })
    expect((await run('curl', ['-sS', '--ssl-reqd', '-k', '-u', u, url])).stdout).toBe('secret\n')
    // PROT C is refused, and so is a transfer without PROT P.
    const script = `
import ftplib, ssl
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
f = ftplib.FTP_TLS(context=ctx, timeout=20); f.connect('127.0.0.1', ${w.s.ftpPort})
f.login(${JSON.stringify(w.user.username)}, ${JSON.stringify(w.user.password)})
for step in (f.prot_c, lambda: f.nlst('/partner')):
    try:
        step(); print('accepted')
    except ftplib.error_perm as e:
        print(str(e)[:3])
`
    const r = await run('python3', ['-c', script])
    expect(r.stdout.split('\n')).toEqual(['534', '521', ''])
  })
})

describe.each(dialects)('FTP limits (%s)', (dialect) => {
  const w = useFtpWorld(dialect, {
    FTP_MAX_SESSIONS_PER_IP: '3',
    FTP_MAX_SESSIONS_PER_USER: '1',
  })
  const open: FtpControl[] = []
  const connect = async () => {
    const c = await FtpControl.connect(w.s.ftpPort)
    open.push(c)
    return c
  }

  /** Another FTP front end on the same site, with some settings changed. */
  const withServer = async (
    settings: Partial<FtpServerDeps['config']>,
    work: (port: number) => Promise<void>,
    now?: () => number,
  ) => {
    const c0 = w.s.container
    const ftp = await FtpServer.start({
      config: { ...c0.config.ftp, port: 0, maxSessionsPerIp: 5, ...settings },
      siteId: c0.site.id,
      fileSystem: c0.services.fileSystem,
      protocolLogin: c0.services.protocolLogin,
      ...(now ? { now } : {}),
    })
    try {
      await work(ftp.address().port)
      await expect.poll(() => ftp.sessionCount).toBe(0)
    } finally {
      await ftp.close()
    }
  }
  afterAll(() => {
    for (const c of open) c.close()
  })

  it('closes a connection that does not log in in time, and one left idle', async () => {
    await withServer({ loginTimeoutMs: 1000 }, async (port) => {
      const c = await FtpControl.connect(port)
      expect(await c.next()).toEqual({ code: 421, text: '421 Login timed out\r\n' })
    })
    // A login slower than the idle timeout is not cut short: the login deadline holds until then.
    await withServer({ loginTimeoutMs: 30_000, idleTimeoutMs: 1000 }, async (port) => {
      const d = await FtpControl.connect(port)
      await d.login(w.user.username, w.user.password)
      expect(await d.next()).toEqual({ code: 421, text: '421 Idle timeout\r\n' })
    })
  })

  it('caps sessions per user at login and per address at connection', async () => {
    const a = await connect()
    await a.login(w.user.username, w.user.password)
    const b = await connect()
    expect((await b.send(`USER ${w.user.username}`)).code).toBe(331)
    const refused = await b.send(`PASS ${w.user.password}`)
    expect(refused.code).toBe(530)
    expect(refused.text).toContain('too many FTP sessions')
    await connect()
    const socket = await import('node:net').then((net) =>
      net.connect({ host: '127.0.0.1', port: w.s.ftpPort }),
    )
    const greeting = await new Promise<string>((resolve) => socket.once('data', (d) => resolve(String(d))))
    socket.destroy()
    expect(greeting).toBe('421 Too many connections from your address; try again later\r\n')
  })

  it('ends a session once its user is disabled, when it reads the login again', async () => {
    let clock = Date.now()
    const settings = { loginTimeoutMs: 30_000, idleTimeoutMs: 30_000 }
    await withServer(
      settings,
      async (port) => {
        const user = await makeUser(w.s)
        const c = await FtpControl.connect(port)
        open.push(c)
        await c.login(user.username, user.password)
        await w.s.container.db.updateTable('users').set({ disabled: 1 }).where('id', '=', user.id).execute()
        // Read again every 30 s, not on every command.
        expect((await c.send('PWD')).code).toBe(257)
        clock += 31_000
        expect(await c.send('PWD')).toEqual({ code: 421, text: '421 Your login is no longer valid\r\n' })
      },
      () => clock,
    )
  })

  it('keeps each address and each user within a quarter of the passive port range', async () => {
    const base = 40_000 + Math.floor(Math.random() * 20_000)
    const other = await makeUser(w.s)
    await grant(w.s, other.id, 'partner', 'full')
    await withServer(
      { passivePorts: { min: base, max: base + 7 }, maxSessionsPerUser: 5, maxSessionsPerIp: 10 },
      async (port) => {
        const sessions: FtpControl[] = []
        const session = async (user: TestUser, from = '127.0.0.1') => {
          const c = await FtpControl.connect(port, from)
          sessions.push(c)
          await c.login(user.username, user.password)
          return c
        }
        const refused = {
          code: 425,
          text: "425 Can't open data connection: your address or user already holds its share of passive ports; connect to those or wait\r\n",
        }
        // 8 ports: 2 listeners waiting at once for an address, 2 for a user.
        const [a, b, c] = [await session(w.user), await session(w.user), await session(w.user)]
        expect((await a.send('EPSV')).code).toBe(229)
        expect((await b.send('PASV')).code).toBe(227)
        expect(await c.send('EPSV')).toEqual(refused)
        // The same user from another address, and another user from the same address.
        expect(await (await session(w.user, '127.0.0.2')).send('EPSV')).toEqual(refused)
        expect(await (await session(other)).send('EPSV')).toEqual(refused)
        // Another user from another address has ports of their own.
        expect((await (await session(other, '127.0.0.2')).send('EPSV')).code).toBe(229)
        // A listener that took its data connection no longer holds a port; a new EPSV replaces
        // the session's own listener rather than adding one.
        expect((await a.send('EPSV')).code).toBe(229)
        const data = await a.passive()
        expect((await c.send('EPSV')).code).toBe(229)
        expect((await c.send('EPSV')).code).toBe(229)
        data.destroy()
        for (const s of sessions) s.close()
      },
    )
  })

  it('refuses bad FTP settings at start-up', () => {
    expect(() => loadConfig({ FTP_PASV_PORTS: '60000-50000' })).toThrow(/FTP_PASV_PORTS must be a range/)
    expect(() => loadConfig({ FTP_PASV_ADDRESS: 'example.com' })).toThrow(/FTP_PASV_ADDRESS must be an IPv4/)
    expect(() => loadConfig({ FTP_TLS_CERT: '/x.pem' })).toThrow(/FTP_TLS_CERT and FTP_TLS_KEY go together/)
    expect(loadConfig({ FTP_PASV_PORTS: '50000-50100' }).ftp).toMatchObject({
      enabled: false,
      port: 2121,
      passivePorts: { min: 50000, max: 50100 },
    })
  })
})

describe.each(dialects)('FTP certificate from FTP_TLS_CERT and FTP_TLS_KEY (%s)', (dialect) => {
  it('refuses to start with a key that is not the certificate’s, naming the settings', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-ftp-cert-'))
    try {
      const [a, b] = await Promise.all(
        [1, 2].map(() => selfsigned.generate([{ name: 'commonName', value: 'x' }])),
      )
      await fs.writeFile(path.join(dir, 'cert.pem'), a!.cert)
      await fs.writeFile(path.join(dir, 'key.pem'), b!.private)
      const config = loadConfig({
        DATA_DIR: dir,
        FTP_TLS_CERT: path.join(dir, 'cert.pem'),
        FTP_TLS_KEY: path.join(dir, 'key.pem'),
      }).ftp
      await expect(loadFtpTls(config)).rejects.toThrow(
        /^FTP_TLS_CERT and FTP_TLS_KEY are not a PEM certificate/,
      )
      await expect(
        loadFtpTls({ ...config, tls: { ...config.tls!, keyFile: path.join(dir, 'none.pem') } }),
      ).rejects.toThrow(/^FTP_TLS_KEY: cannot read .*none\.pem \(ENOENT\)/)
    } finally {
      await fs.rm(dir, { recursive: true, force: true })
    }
  })

  describe('with a certificate of its own', () => {
    let dir: string
    let cert: string
    beforeAll(async () => {
      dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-ftp-cert-'))
      const pair = await selfsigned.generate([{ name: 'commonName', value: 'ftp.example.test' }], {
        keySize: 2048,
      })
      cert = pair.cert
      await fs.writeFile(path.join(dir, 'cert.pem'), pair.cert)
      await fs.writeFile(path.join(dir, 'key.pem'), pair.private)
    })
    afterAll(async () => {
      if (dir) await fs.rm(dir, { recursive: true, force: true })
    })
    const w = useFtpWorld(dialect, () => ({
      FTP_TLS_CERT: path.join(dir, 'cert.pem'),
      FTP_TLS_KEY: path.join(dir, 'key.pem'),
    }))

    it('serves the given certificate and generates none', async () => {
      expect(w.s.ftp.fingerprint).toBe(new crypto.X509Certificate(cert).fingerprint256)
      const u = `${w.user.username}:${w.user.password}`
      const r = await run('curl', [
        '-sS',
        '-v',
        '--ssl-reqd',
        '-k',
        '-u',
        u,
        `ftp://127.0.0.1:${w.s.ftpPort}/partner/`,
      ])
      expect(r.code).toBe(0)
      expect(r.stderr).toContain('subject: CN=ftp.example.test')
      await expect(fs.access(w.s.container.config.ftp.tlsDir)).rejects.toThrow()
    })
  })
})
