import { execFile } from 'node:child_process'
import crypto from 'node:crypto'
import net from 'node:net'
import { expect } from 'vitest'
import { FtpServer } from '../../src/ftp/ftp-server.js'
import { operatorPrincipal } from '../../src/identity/principal.js'
import { startListener, type TestListener } from './listener.js'
import {
  call,
  type Deferred,
  type DialectName,
  grant,
  makeUser,
  settle,
  startServer,
  type TestServer,
  type TestUser,
  useStarted,
} from './server.js'
import { startSftpServer } from './sftp.js'

export interface FtpTestServer extends TestServer {
  ftp: FtpServer
  ftpPort: number
}

/** A real Wharf with its FTP front end on a free loopback port (the HTTP API beside it). */
export async function startFtpServer(
  dialect: DialectName,
  env: Record<string, string> = {},
): Promise<FtpTestServer> {
  const s = await startServer(dialect, {
    FTP_ENABLED: 'true',
    FTP_HOST: '127.0.0.1',
    FTP_PORT: '0',
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
    ...env,
  })
  const ftp = await startFtpFront(s)
  return {
    ...s,
    ftp,
    ftpPort: ftp.address().port,
    async close() {
      await ftp.close()
      await s.close()
    },
  }
}

/** A test server with its SFTP front end and an FTP front end beside it: every protocol at once. */
export async function startSftpAndFtpServer(dialect: DialectName, env: Record<string, string> = {}) {
  const server = await startSftpServer(dialect, {
    FTP_ENABLED: 'true',
    FTP_HOST: '127.0.0.1',
    FTP_PORT: '0',
    ...env,
  })
  const ftp = await startFtpFront(server)
  return {
    ...server,
    ftpPort: ftp.address().port,
    async close() {
      await ftp.close()
      await server.close()
    },
  }
}

/** The FTP front end of a test server's site, with the server's FTP settings. */
export function startFtpFront(s: TestServer): Promise<FtpServer> {
  return FtpServer.start({
    config: s.container.config.ftp,
    siteId: s.container.site.id,
    fileSystem: s.container.services.fileSystem,
    protocolLogin: s.container.services.protocolLogin,
  })
}

export interface FtpWorld {
  s: FtpTestServer
  listener: TestListener
  /** Has full permission on `partner` only; `private` exists but is not theirs. */
  user: TestUser
  /** Closes the listener and the server. */
  close(): Promise<void>
}

/** A server, a webhook listener for Upload/Rename/Move/Delete, and a user with one folder. */
export async function ftpWorld(dialect: DialectName, env: Record<string, string> = {}): Promise<FtpWorld> {
  const s = await startFtpServer(dialect, env)
  const listener = await startListener()
  const r = await call(s, 'PATCH', '/webhook_settings', {
    key: s.adminKey,
    body: { url: listener.url, triggers: ['Upload', 'Rename', 'Move', 'Delete'], enabled: true },
  })
  expect(r.status).toBe(200)
  const op = operatorPrincipal(s.container.site.id)
  await s.container.services.folders.mkdir(op, 'partner', {})
  await s.container.services.folders.mkdir(op, 'private', {})
  const user = await makeUser(s, { username: `partner-${crypto.randomBytes(3).toString('hex')}` })
  await grant(s, user.id, 'partner', 'full')
  return {
    s,
    listener,
    user,
    async close() {
      await listener.close()
      await s.close()
    },
  }
}

/** An ftpWorld for the block: made before its first test, closed after its last. */
export function useFtpWorld(dialect: DialectName, env: Deferred<Record<string, string>> = {}): FtpWorld {
  return useStarted(`${dialect} FTP world`, () => ftpWorld(dialect, settle(env)))
}

/** The webhook an upload of `path` sent (waits for it). */
export async function uploadHook(w: FtpWorld, path: string): Promise<any> {
  let found: any
  await expect
    .poll(
      () => {
        found = w.listener.received.find((r) => r.json?.operation === 'Upload' && r.json?.path === path)?.json
        return found !== undefined
      },
      { timeout: 10_000 },
    )
    .toBe(true)
  return found
}

/** The interfaces of the history entries of a file, read through the REST API. */
export async function historyInterfaces(s: TestServer, path: string): Promise<string[]> {
  const r = await call(s, 'GET', `/history/files/${path}`, { key: s.adminKey })
  expect(r.status).toBe(200)
  return (r.body as { interface: string }[]).map((a) => a.interface)
}

export const md5 = (data: Buffer | string) => crypto.createHash('md5').update(data).digest('hex')

export interface ToolResult {
  code: number
  stdout: string
  stderr: string
}

/** Runs a client program with a time limit; never throws on a non-zero exit. */
export function run(
  cmd: string,
  args: string[],
  opts: { timeoutMs?: number; cwd?: string } = {},
): Promise<ToolResult> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      {
        timeout: opts.timeoutMs ?? 60_000,
        cwd: opts.cwd,
        maxBuffer: 16 * 1024 * 1024,
        killSignal: 'SIGKILL',
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0
        resolve({ code, stdout: String(stdout), stderr: String(stderr) })
      },
    )
  })
}

/** A bare FTP control connection for protocol-level tests: one command, one reply. */
export class FtpControl {
  private buffer = ''
  private waiting: (() => void) | null = null
  closed = false

  private constructor(readonly socket: net.Socket) {
    socket.setEncoding('utf8')
    socket.on('data', (d: string) => {
      this.buffer += d
      this.waiting?.()
    })
    socket.on('close', () => {
      this.closed = true
      this.waiting?.()
    })
    socket.on('error', () => undefined)
  }

  static async connect(port: number, localAddress = '127.0.0.1'): Promise<FtpControl> {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress })
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))
    const c = new FtpControl(socket)
    await c.next()
    return c
  }

  /** The next complete reply (multi-line replies in full). */
  async next(timeoutMs = 10_000): Promise<{ code: number; text: string }> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const m = /^(\d{3}) [^\n]*\n/m.exec(this.buffer)
      if (m) {
        const end = m.index + m[0].length
        const text = this.buffer.slice(0, end)
        this.buffer = this.buffer.slice(end)
        return { code: Number(m[1]), text }
      }
      if (this.closed) throw new Error(`connection closed; unread: ${JSON.stringify(this.buffer)}`)
      if (Date.now() > deadline) throw new Error(`no reply; unread: ${JSON.stringify(this.buffer)}`)
      await new Promise<void>((resolve) => {
        this.waiting = resolve
        setTimeout(resolve, 200)
      })
      this.waiting = null
    }
  }

  async send(line: string | Buffer): Promise<{ code: number; text: string }> {
    this.socket.write(typeof line === 'string' ? `${line}\r\n` : line)
    return this.next()
  }

  async login(user: string, password: string): Promise<void> {
    expect((await this.send(`USER ${user}`)).code).toBe(331)
    expect((await this.send(`PASS ${password}`)).code).toBe(230)
  }

  /** EPSV, then a data connection to the announced port. */
  async passive(localAddress = '127.0.0.1'): Promise<net.Socket> {
    const r = await this.send('EPSV')
    expect(r.code).toBe(229)
    const port = Number(/\|\|\|(\d+)\|/.exec(r.text)![1])
    const data = net.connect({ host: '127.0.0.1', port, localAddress })
    data.on('error', () => undefined)
    await new Promise((resolve) => data.once('connect', resolve))
    return data
  }

  close(): void {
    this.socket.destroy()
  }
}
