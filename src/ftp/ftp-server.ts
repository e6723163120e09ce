import net from 'node:net'
import type { Logger } from 'pino'
import { listenOn } from '../connections/front-end.js'
import { SocketConnections } from '../connections/socket-connections.js'
import type { ProtocolLogin } from '../modules/auth/protocol-login.js'
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
 * FtpSessions (their caps, login deadline and idle timer are `SocketConnections`'). It ends
 * them all when it closes.
 */
export class FtpServer {
  private readonly sessions = new Set<FtpSession>()

  private constructor(
    private readonly server: net.Server,
    private readonly connections: SocketConnections,
    /** SHA-256 fingerprint of the TLS certificate, printed at start-up for users to compare. */
    readonly fingerprint: string,
  ) {}

  static async start(deps: FtpServerDeps): Promise<FtpServer> {
    const { config } = deps
    const tls = await loadFtpTls(config, deps.serverKeys)
    // Replies go out as they are written: with Nagle's algorithm a reply that follows another
    // (150, then 226) waited for the client's delayed acknowledgement of the first.
    const server = net.createServer({ noDelay: true })
    const ftp = new FtpServer(server, new SocketConnections('FTP', config, deps.logger), tls.fingerprint)
    const now = deps.now ?? Date.now
    const passive = new PassiveShares(config.passivePorts)
    server.on('connection', (socket) => {
      socket.on('error', () => undefined)
      let session: FtpSession | undefined
      const conn = ftp.connections.accept(socket, plainAddress(socket.remoteAddress), {
        tooManyFromAddress: () => {
          socket.end('421 Too many connections from your address; try again later\r\n')
          setTimeout(() => socket.destroy(), 1000).unref()
        },
        loginTimedOut: () => session?.close('Login timed out'),
        idle: () => session?.close('Idle timeout'),
        // A long transfer is not idleness: the data connection has its own timeout.
        busy: () => session?.transfer != null,
      })
      if (!conn) return
      const opened = new FtpSession(
        {
          commands: COMMANDS,
          config,
          tls,
          fileSystem: deps.fileSystem,
          login: (username, password, from) =>
            deps.protocolLogin.password(deps.siteId, { username, password, ip: from, interface: 'ftp' }),
          now,
          claimPassive: (address, userId) => passive.claim(address, userId),
        },
        conn,
      )
      session = opened
      ftp.sessions.add(opened)
      // The command running when the connection closed (an upload being aborted) is waited for.
      conn.onClose(() => {
        ftp.sessions.delete(opened)
        return opened.settled()
      })
      opened.reply(220, 'Wharf FTP server ready')
    })
    await (deps.listen ?? listenOn(config))(server)
    return ftp
  }

  address(): { host: string; port: number } {
    const a = this.server.address() as net.AddressInfo
    return { host: a.address, port: a.port }
  }

  /** Open control connections (tests wait for them to go). */
  get sessionCount(): number {
    return this.connections.size
  }

  /** Resolves once every closed session's last command has finished (tests wait for aborts). */
  async settled(): Promise<void> {
    await this.connections.settled()
  }

  /** Ends every connection at once (the shutdown deadline): transfers in progress are aborted. */
  cut(): void {
    for (const { socket } of this.connections.all()) socket.destroy()
  }

  /** Stops listening and ends every session: transfers in progress are aborted, nothing half-written is kept. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()))
    for (const s of [...this.sessions]) s.close('Server shutting down')
    await Promise.all([closed, this.settled()])
  }
}
