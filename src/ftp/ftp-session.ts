import type net from 'node:net'
import tls from 'node:tls'
import type { Connection } from '../connections/socket-connections.js'
import { CheckedLogin } from '../modules/auth/checked-login.js'
import type { ProtocolSession } from '../modules/auth/protocol-login.js'
import type { FileSystem, UserFileSystem } from '../modules/files/vfs/file-system.js'
import type { FtpConfig } from './ftp-config.js'
import { oneLine, reply, replyOf } from './ftp-errors.js'
import { decodeLine, printable, verbOf } from './ftp-lines.js'
import { PassiveListener, plainAddress } from './ftp-passive.js'
import { resolveFtpPath } from './ftp-paths.js'
import type { FtpTls } from './ftp-tls.js'

/** What every connection shares: the server's settings, the facade and the session registry. */
/** One FTP command: what it needs and what it does on a session. */
export interface FtpCommand {
  /** Refused with 530 before login. */
  login: boolean
  /** Names a new file or folder: a bad name is 553, not 550. */
  creating?: boolean
  run(s: FtpSession, arg: string): void | Promise<void>
}

export interface FtpContext {
  /** The commands this session answers, by verb (ftp-commands.ts). */
  commands: Readonly<Record<string, FtpCommand>>
  config: FtpConfig
  tls: FtpTls
  fileSystem: FileSystem
  login: (username: string, password: string, ip: string) => Promise<ProtocolSession>
  now: () => number
  /** Counts a passive listener of an address and user: the release, or null past their share of the ports. */
  claimPassive(address: string, userId: number): (() => void) | null
}

/** The transfer running on the data connection, which ABOR (or a closing connection) stops. */
export interface Transfer {
  abort(reason: string): void
}

const MAX_LINE_BYTES = 8192
const MAX_QUEUED_LINES = 64
const TRANSFERS = new Set(['RETR', 'STOR', 'APPE', 'LIST', 'NLST', 'MLSD'])

/** One control connection: reads commands a line at a time, runs them in order, replies. */
export class FtpSession {
  readonly ip: string
  socket: net.Socket
  secure = false
  /** PBSZ was sent (RFC 4217 wants it before PROT). */
  pbsz = false
  protectData = false
  userName: string | null = null
  login: ProtocolSession | null = null
  cwd = ''
  renameFrom: string | null = null
  restOffset = 0
  passive: PassiveListener | null = null
  transfer: Transfer | null = null
  private checked: CheckedLogin<UserFileSystem> | null = null
  private buffer = Buffer.alloc(0)
  private discarding = false
  private upgrading = false
  private queue: string[] = []
  private running = false
  private idle: Promise<void> = Promise.resolve()
  private closed = false

  constructor(
    readonly ctx: FtpContext,
    /** The connection's caps, timers and log fields. */
    readonly conn: Connection,
  ) {
    this.socket = conn.socket
    this.ip = conn.ip
    this.listen(conn.socket)
  }

  /** Sends a reply; several lines make a multi-line reply (RFC 959, 4.2). */
  reply(code: number, text: string | string[]): void {
    if (this.closed || this.socket.destroyed) return
    const lines = (Array.isArray(text) ? text : [text]).map(oneLine)
    if (lines.length === 1) {
      this.socket.write(`${code} ${lines[0]}\r\n`)
      return
    }
    const last = lines.pop()
    this.socket.write(`${code}-${lines.join('\r\n ')}\r\n${code} ${last}\r\n`)
  }

  /** The file tree of the logged-in user. */
  get files(): UserFileSystem {
    if (!this.checked) throw new Error('not logged in')
    return this.checked.value
  }

  path(arg: string): string {
    return resolveFtpPath(this.cwd, arg)
  }

  /** The user has logged in: the session counts against the user's limit. */
  loggedIn(login: ProtocolSession): boolean {
    const user = login.principal.user
    if (!this.conn.login(String(user?.id ?? 0), user?.username)) return false
    this.login = login
    this.checked = new CheckedLogin(login, (p) => this.ctx.fileSystem.as(p, 'ftp'), this.ctx.now)
    return true
  }

  /** The reply 234 is sent in plain text; everything after it is TLS. */
  upgradeToTls(): void {
    const raw = this.socket
    raw.removeAllListeners('data')
    raw.pause()
    this.upgrading = true
    // Commands sent after AUTH TLS but before the handshake are dropped, not run (command
    // injection into a TLS session, as in CVE-2011-0411).
    this.queue = []
    this.buffer = Buffer.alloc(0)
    raw.write('234 AUTH TLS successful\r\n', () => {
      if (this.closed) return
      const secure = new tls.TLSSocket(raw, { isServer: true, secureContext: this.ctx.tls.context })
      this.socket = secure
      this.secure = true
      this.upgrading = false
      this.listen(secure)
    })
  }

  /** Opens the passive listener (a new one replaces the last), within the client's share of ports. */
  async openPassive(): Promise<PassiveListener> {
    this.passive?.close()
    this.passive = null
    const { config } = this.ctx
    const release = this.ctx.claimPassive(this.ip, this.login?.principal.user?.id ?? 0)
    if (!release) {
      throw reply(
        425,
        "Can't open data connection: your address or user already holds its share of passive ports; connect to those or wait",
      )
    }
    this.passive = await PassiveListener.open({
      bindAddress: plainAddress(this.socket.localAddress),
      ports: config.passivePorts,
      clientAddress: this.ip,
      timeoutMs: config.dataTimeoutMs,
      release,
    })
    return this.passive
  }

  close(goodbye?: string): void {
    if (this.closed) return
    if (goodbye) this.reply(421, goodbye)
    this.closed = true
    this.transfer?.abort('The control connection closed')
    this.passive?.close()
    this.socket.end()
    // A client that never reads its replies is not waited for.
    setTimeout(() => this.socket.destroy(), 2000).unref()
    void this.login?.end().catch(() => undefined)
    this.conn.close()
  }

  get isClosed(): boolean {
    return this.closed
  }

  private listen(socket: net.Socket): void {
    socket.on('data', (chunk: Buffer) => this.received(chunk))
    socket.on('error', () => this.close())
    socket.on('close', () => this.close())
    socket.on('end', () => this.close())
  }

  private received(chunk: Buffer): void {
    if (this.upgrading) return
    let data = Buffer.concat([this.buffer, chunk])
    for (let nl = data.indexOf(10); nl >= 0; nl = data.indexOf(10)) {
      const line = data.subarray(0, nl)
      data = data.subarray(nl + 1)
      if (this.discarding) {
        this.discarding = false
        continue
      }
      if (line.length > MAX_LINE_BYTES) {
        this.reply(500, 'Command line too long')
        continue
      }
      this.enqueue(decodeLine(line))
      // After AUTH TLS the rest of this plain-text chunk is not the client's to send.
      if (this.closed || this.upgrading) return
    }
    if (data.length > MAX_LINE_BYTES) {
      this.reply(500, 'Command line too long')
      this.discarding = true
      data = Buffer.alloc(0)
    }
    this.buffer = data
  }

  private enqueue(line: string): void {
    const verb = verbOf(line)
    // ABOR must reach a running transfer, which holds up every other command.
    if (verb === 'ABOR' && this.transfer) {
      this.transfer.abort('Transfer aborted by ABOR')
      this.queue.push(line)
    } else if (this.queue.length >= MAX_QUEUED_LINES) {
      this.close('Too many commands sent without waiting for replies')
      return
    } else {
      this.queue.push(line)
    }
    this.drain()
  }

  private drain(): void {
    if (this.running) return
    this.running = true
    this.idle = (async () => {
      try {
        for (let line = this.queue.shift(); line !== undefined && !this.closed; line = this.queue.shift()) {
          await this.run(line)
        }
      } finally {
        this.running = false
      }
    })()
  }

  /** Resolves once the command running now (an upload's commit or abort included) has finished. */
  settled(): Promise<void> {
    return this.idle
  }

  private async run(line: string): Promise<void> {
    const verb = verbOf(line)
    const arg = line.slice(verb.length).replace(/^ /, '')
    const command = Object.hasOwn(this.ctx.commands, verb) ? this.ctx.commands[verb] : undefined
    if (!command) {
      this.reply(
        verb === '' ? 500 : 502,
        verb === '' ? 'Empty command' : `Command not implemented: ${printable(verb)}`,
      )
      return
    }
    this.conn.activity()
    if (command.login && !this.login) {
      this.reply(530, 'Please log in with USER and PASS first')
      return
    }
    // RNTO must follow RNFR at once (RFC 959). REST lasts until the next transfer, as clients
    // send PASV or TYPE between the two.
    if (verb !== 'RNTO') this.renameFrom = null
    if (command.login && !(await this.refresh())) return
    try {
      await command.run(this, arg)
    } catch (err) {
      const r = replyOf(err, command.creating === true)
      if (r.fault) this.conn.log.error({ err, command: verb }, 'FTP command failed')
      this.reply(r.code, r.text)
    } finally {
      if (TRANSFERS.has(verb)) this.restOffset = 0
      this.conn.activity()
    }
  }

  /** Reads the principal again now and then: a disabled user or revoked key stops working. */
  private async refresh(): Promise<boolean> {
    if (!this.checked) return true
    try {
      await this.checked.current()
      return true
    } catch {
      this.close('Your login is no longer valid')
      return false
    }
  }
}
