import net from 'node:net'
import type { Logger } from 'pino'
import type { ProtocolLogin } from '../modules/auth/protocol-login.js'
import { SessionCounter } from '../modules/auth/session-counter.js'
import type { FileSystem } from '../modules/files/vfs/file-system.js'
import type { ServerKeys } from '../modules/server-keys/server-keys.js'
import { COMMANDS } from './ftp-commands.js'
import type { FtpConfig } from './ftp-config.js'
import { PassiveShares, plainAddress } from './ftp-passive.js'
import { FtpSession } from './ftp-session.js'
import { loadFtpTls } from './ftp-tls.js'

export interface FtpServerDeps {
  config: FtpConfig
  siteId: number
  fileSystem: FileSystem
  protocolLogin: ProtocolLogin
  /** Where the generated certificate is shared with the other nodes; without it, DATA_DIR/ftp only. */
  serverKeys?: ServerKeys
  logger?: Logger
  now?: () => number
  /** Listens on a port bound before start-up (the server's); by default on the config's host and port. */
  listen?: (server: net.Server) => Promise<void>
}

/**
 * The FTP and FTPS (explicit TLS) front end: a listener on its own port whose connections are
 * FtpSessions. It counts sessions per address and per user, and ends them all when it closes.
 */
export class FtpServer {
  private readonly sessions = new Set<FtpSession>()
  private readonly perIp = new SessionCounter<string>()
  private readonly perUser = new SessionCounter<number>()
  /** Commands of closed sessions still finishing (an upload being aborted). */
  private readonly closing = new Set<Promise<void>>()

  private constructor(
    private readonly server: net.Server,
    /** SHA-256 fingerprint of the TLS certificate, printed at start-up for users to compare. */
    readonly fingerprint: string,
  ) {}

  static async start(deps: FtpServerDeps): Promise<FtpServer> {
    const { config } = deps
    const tls = await loadFtpTls(config, deps.serverKeys)
    // Replies go out as they are written: with Nagle's algorithm a reply that follows another
    // (150, then 226) waited for the client's delayed acknowledgement of the first.
    const server = net.createServer({ noDelay: true })
    const ftp = new FtpServer(server, tls.fingerprint)
    const now = deps.now ?? Date.now
    const passive = new PassiveShares(config.passivePorts)
    server.on('connection', (socket) => {
      socket.on('error', () => undefined)
      const ip = plainAddress(socket.remoteAddress)
      const releaseIp = ftp.perIp.claim(ip, config.maxSessionsPerIp)
      if (!releaseIp) {
        socket.end('421 Too many connections from your address; try again later\r\n')
        setTimeout(() => socket.destroy(), 1000).unref()
        return
      }
      const session = new FtpSession(
        {
          commands: COMMANDS,
          config,
          tls,
          fileSystem: deps.fileSystem,
          login: (username, password, from) =>
            deps.protocolLogin.password(deps.siteId, { username, password, ip: from, interface: 'ftp' }),
          logger: deps.logger,
          now,
          claimUser: (userId) => ftp.perUser.claim(userId, config.maxSessionsPerUser),
          claimPassive: (address, userId) => passive.claim(address, userId),
          ended: (s) => {
            if (!ftp.sessions.delete(s)) return
            releaseIp()
            const settled = s.settled()
            ftp.closing.add(settled)
            void settled.finally(() => ftp.closing.delete(settled))
          },
        },
        socket,
      )
      ftp.sessions.add(session)
      session.reply(220, 'Wharf FTP server ready')
    })
    await (deps.listen?.(server) ??
      new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen({ host: config.host, port: config.port }, () => {
          server.off('error', reject)
          resolve()
        })
      }))
    return ftp
  }

  address(): { host: string; port: number } {
    const a = this.server.address() as net.AddressInfo
    return { host: a.address, port: a.port }
  }

  /** Open control connections (tests wait for them to go). */
  get sessionCount(): number {
    return this.sessions.size
  }

  /** Resolves once every closed session's last command has finished (tests wait for aborts). */
  async settled(): Promise<void> {
    await Promise.all([...this.closing])
  }

  /** Stops listening and ends every session: transfers in progress are aborted, nothing half-written is kept. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()))
    for (const s of [...this.sessions]) s.close('Server shutting down')
    await Promise.all([closed, this.settled()])
  }
}
