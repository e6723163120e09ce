import crypto from 'node:crypto'
import fs from 'node:fs/promises'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { FtpServer } from '../src/ftp/ftp-server.js'
import { FtpControl, type FtpWorld, md5, useFtpWorld } from './helpers/ftp.js'
import { dialects, makeKey } from './helpers/server.js'

/** The FTP server at the level of commands and replies, with a bare socket as the client. */
describe.each(dialects)('FTP protocol (%s)', (dialect) => {
  const base = 40_000 + Math.floor(Math.random() * 20_000)
  const w = useFtpWorld(dialect, { FTP_PASV_PORTS: `${base}-${base + 20}` })
  const open: FtpControl[] = []

  const connect = async (localAddress?: string) => {
    const c = await FtpControl.connect(w.s.ftpPort, localAddress)
    open.push(c)
    return c
  }
  const loggedIn = async () => {
    const c = await connect()
    await c.login(w.user.username, w.user.password)
    return c
  }
  const exists = (p: string) => w.s.container.services.fileSystem.as(adminOf(w), 'ftp').exists(p)

  afterAll(() => {
    for (const c of open) c.close()
  })

  it('answers 530 before login, 502 to unknown commands and 5xx to garbage, and stays up', async () => {
    const c = await connect()
    for (const cmd of ['LIST', 'RETR /partner/x', 'CWD /', 'EPSV', 'STOR x', 'DELE x', 'MKD x']) {
      expect((await c.send(cmd)).code).toBe(530)
    }
    expect((await c.send('FROB x')).code).toBe(502)
    expect((await c.send('')).code).toBe(500)
    expect((await c.send(Buffer.from([0x00, 0xc3, 0x28, 0xff, 0xfe, 0x01, 0x0d, 0x0a]))).code).toBe(502)
    expect((await c.send('A'.repeat(10_000))).code).toBe(500)
    const garbage = crypto
      .randomBytes(3000)
      .toString('latin1')
      .replace(/[\r\n]/g, '')
    expect((await c.send(garbage)).code).toBeGreaterThanOrEqual(500)
    expect((await c.send('NOOP')).code).toBe(200)
    const feat = await c.send('FEAT')
    expect(feat.code).toBe(211)
    expect(feat.text).toContain(' AUTH TLS\r\n')
    expect(feat.text).toContain(' MLST type*;size*;modify*;\r\n')
    expect((await c.send('SYST')).text).toBe('215 UNIX Type: L8\r\n')
    expect((await c.send('HELP')).text).toMatch(
      /^214-Commands:\r\n .*\bEPSV\b.*\bMLSD\b.*\r\n214 Help OK\r\n$/,
    )
    // The server takes new connections and logins after all that.
    const d = await loggedIn()
    expect((await d.send('PWD')).text).toBe('257 "/" is the current folder\r\n')
  })

  it('refuses paths above the root, with control characters or too long, with 550 or 553', async () => {
    const c = await loggedIn()
    const above = await c.send('CWD /partner/../..')
    expect(above.code).toBe(550)
    expect(above.text).toContain('above the root')
    expect((await c.send('RETR ../../etc/passwd')).code).toBe(550)
    const control = await c.send('MKD /partner/a\x01b')
    expect(control.code).toBe(553)
    expect(control.text).toContain('control characters')
    const long = await c.send(`STOR /partner/${'x'.repeat(6000)}`)
    expect(long.code).toBe(553)
    expect(long.text).toContain('longer than 5000')
    expect((await c.send('CWD /private')).code).toBe(550)
    expect((await c.send('MKD /private/mine')).code).toBe(550)
    expect((await c.send('PORT 127,0,0,1,200,10')).code).toBe(502)
    expect((await c.send('EPRT |1|127.0.0.1|51210|')).code).toBe(502)
    expect((await c.send('TYPE E')).code).toBe(504)
    expect((await c.send('CWD partner')).code).toBe(250)
    expect((await c.send('CDUP')).code).toBe(250)
    expect((await c.send('PWD')).text).toBe('257 "/" is the current folder\r\n')
    // Logged in, an unknown command (or one Wharf does not offer) is still 502, and a bad name
    // in a rename or a delete is refused like any other.
    expect((await c.send('FROB /partner')).code).toBe(502)
    expect((await c.send('SITE CHMOD 600 /partner')).code).toBe(502)
    expect((await c.send('RNFR /partner/../../x')).code).toBe(550)
    expect((await c.send('DELE /partner/a\x7fb')).code).toBe(550)
    expect((await c.send(`RMD /partner/${'y'.repeat(6000)}`)).code).toBe(550)
    expect((await c.send('NOOP')).code).toBe(200)
  })

  it('streams STOR and RETR on passive ports of the range, with REST, SIZE, MDTM and MLST', async () => {
    const c = await loggedIn()
    const data = crypto.randomBytes(200_000)
    const up = await c.passive()
    expect(up.remotePort).toBeGreaterThanOrEqual(base)
    expect(up.remotePort).toBeLessThanOrEqual(base + 20)
    expect((await c.send('STOR /partner/raw.bin')).code).toBe(150)
    up.end(data)
    expect((await c.next()).code).toBe(226)
    expect((await c.send('SIZE /partner/raw.bin')).text).toBe(`213 ${data.length}\r\n`)
    expect((await c.send('MDTM /partner/raw.bin')).text).toMatch(/^213 \d{14}(\.\d{3})?\r\n$/)
    expect((await c.send('MLST /partner/raw.bin')).text).toMatch(
      new RegExp(
        `^250-.*\\r\\n type=file;size=${data.length};modify=\\d{14}(\\.\\d{3})?; /partner/raw.bin\\r\\n250 End`,
      ),
    )
    expect((await c.send('REST 1000')).code).toBe(350)
    const down = await c.passive()
    const chunks: Buffer[] = []
    down.on('data', (b: Buffer) => chunks.push(b))
    const ended = new Promise((resolve) => down.on('close', resolve))
    expect((await c.send('RETR /partner/raw.bin')).code).toBe(150)
    expect((await c.next()).code).toBe(226)
    await ended
    expect(md5(Buffer.concat(chunks))).toBe(md5(data.subarray(1000)))
    // Uploads are whole files: no resumed STOR, no append to a non-empty file.
    expect((await c.send('REST 10')).code).toBe(350)
    expect((await c.send('STOR /partner/raw.bin')).code).toBe(550)
    expect((await c.send('APPE /partner/raw.bin')).code).toBe(550)
  })

  it('takes a data connection only from the control connection’s address', async () => {
    const c = await loggedIn()
    const r = await c.send('EPSV')
    const port = Number(/\|\|\|(\d+)\|/.exec(r.text)![1])
    const { connect: netConnect } = await import('node:net')
    const stranger = netConnect({ host: '127.0.0.1', port, localAddress: '127.0.0.2' })
    stranger.on('error', () => undefined)
    await new Promise((resolve) => stranger.on('close', resolve))
    const own = netConnect({ host: '127.0.0.1', port, localAddress: '127.0.0.1' })
    const listing: Buffer[] = []
    own.on('data', (b: Buffer) => listing.push(b))
    expect((await c.send('NLST -a /partner')).code).toBe(150)
    expect((await c.next()).code).toBe(226)
    await vi_waitClosed(own)
    expect(Buffer.concat(listing).toString()).toContain('raw.bin\r\n')
  })

  it('leaves no file when the data connection is reset or the control connection drops mid-STOR', async () => {
    const c = await loggedIn()
    const data = await c.passive()
    expect((await c.send('STOR /partner/reset.bin')).code).toBe(150)
    data.write(crypto.randomBytes(100_000))
    await new Promise((resolve) => setTimeout(resolve, 50))
    data.resetAndDestroy()
    expect((await c.next()).code).toBe(426)
    await c.send('NOOP')
    expect(await exists('partner/reset.bin')).toBeNull()

    const d = await loggedIn()
    const data2 = await d.passive()
    expect((await d.send('STOR /partner/dropped.bin')).code).toBe(150)
    data2.write(crypto.randomBytes(100_000))
    // A client that dies closes both connections at once: the data connection's clean close
    // must not pass for the end of the file.
    data2.end()
    d.close()
    await vi_waitClosed(data2)
    await expect.poll(() => w.s.ftp.sessionCount).toBe(open.filter((o) => !o.closed).length)
    await w.s.ftp.settled()
    expect(await exists('partner/dropped.bin')).toBeNull()
    // The server is still there.
    const e = await loggedIn()
    expect((await e.send('NOOP')).code).toBe(200)
  })

  it('stops an upload on ABOR (sent after Telnet IP and Synch, as ftplib does) and keeps nothing', async () => {
    const c = await loggedIn()
    const data = await c.passive()
    expect((await c.send('STOR /partner/aborted.bin')).code).toBe(150)
    data.write(crypto.randomBytes(50_000))
    const aborted = await c.send(Buffer.from('\xff\xf4\xff\xf2ABOR\r\n', 'latin1'))
    expect(aborted.code).toBe(426)
    expect((await c.next()).code).toBe(226)
    await w.s.ftp.settled()
    expect(await exists('partner/aborted.bin')).toBeNull()
    expect((await c.send('ABOR')).code).toBe(226)
  })

  it('stops a download its client does not read on ABOR, and goes on serving the session', async () => {
    const c = await loggedIn()
    const up = await c.passive()
    expect((await c.send('STOR /partner/big.bin')).code).toBe(150)
    up.end(crypto.randomBytes(16 * 1024 * 1024))
    expect((await c.next()).code).toBe(226)
    const down = await c.passive()
    down.pause()
    expect((await c.send('RETR /partner/big.bin')).code).toBe(150)
    const aborted = await c.send('ABOR')
    expect(aborted).toEqual({ code: 426, text: '426 Transfer aborted by ABOR\r\n' })
    expect((await c.next()).code).toBe(226)
    expect((await c.send('NOOP')).code).toBe(200)
    down.destroy()
  })

  it('takes an API key as the password of its own user', async () => {
    const key = await makeKey(w.s, w.user.id)
    const c = await connect()
    await c.login(w.user.username, key.key)
    expect((await c.send('CWD /partner')).code).toBe(250)
    const other = await connect()
    expect((await other.send('USER admin')).code).toBe(331)
    expect((await other.send(`PASS ${key.key}`)).code).toBe(530)
  })

  it('keeps its generated certificate across restarts', async () => {
    const dir = w.s.container.config.ftp.tlsDir
    const key = await fs.stat(path.join(dir, 'tls-key.pem'))
    expect(key.mode & 0o777).toBe(0o600)
    const again = await FtpServer.start({
      config: { ...w.s.container.config.ftp, port: 0 },
      siteId: w.s.container.site.id,
      fileSystem: w.s.container.services.fileSystem,
      protocolLogin: w.s.container.services.protocolLogin,
    })
    try {
      expect(again.fingerprint).toBe(w.s.ftp.fingerprint)
      expect(again.fingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/)
    } finally {
      await again.close()
    }
  })
})

function adminOf(w: FtpWorld) {
  return { ...operator(w), interface: 'ftp' as const }
}

function operator(w: FtpWorld) {
  return {
    siteId: w.s.container.site.id,
    user: null,
    apiKey: null,
    sessionHash: null,
    permissionSet: 'full' as const,
    ip: '127.0.0.1',
    interface: 'robot' as const,
  }
}

function vi_waitClosed(socket: import('node:net').Socket): Promise<void> {
  if (socket.destroyed) return Promise.resolve()
  return new Promise((resolve) => socket.on('close', () => resolve()))
}
