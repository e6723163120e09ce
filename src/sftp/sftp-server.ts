import net, { type AddressInfo } from 'node:net'
import type { Logger } from 'pino'
import ssh2, { type Connection } from 'ssh2'
import { type Connection as SocketConnection, SocketConnections } from '../connections/socket-connections.js'
import { CheckedLogin } from '../modules/auth/checked-login.js'
import type { ProtocolSession } from '../modules/auth/protocol-login.js'
import type { FrontEndContext } from '../modules/services.js'
import type { HostKey, HostKeys } from '../modules/ssh/host-keys.js'
import { parseExec, runExec } from './sftp-exec.js'
import { announceBan, authenticate, MAX_AUTH_TRIES, sftpAuthState } from './sftp-login.js'
import { ReadStreams } from './sftp-read-streams.js'
import { serveSftp } from './sftp-session.js'
import type { SftpSettings } from './sftp-settings.js'
import { type WriteBudget, WriteBudgets } from './sftp-write-budget.js'

/** Session channels (SFTP, a command, a refused shell) one connection may hold open, as OpenSSH's MaxSessions. */
export const MAX_CHANNELS_PER_CONNECTION = 10

export interface SftpServer {
  host: string
  port: number
  hostKeys: HostKey[]
  close(): Promise<void>
}

/**
 * The SFTP front end: an SSH server (ssh2) that offers the `sftp` subsystem and nothing else,
 * over the file-system facade. Logins are those of POST /sessions, or a registered public key.
 */
export async function startSftp(
  c: FrontEndContext & { hostKeys: HostKeys },
  cfg: SftpSettings,
  logger: Logger,
  /** Listens on a port bound before start-up (the server's); by default on cfg.host:cfg.port. */
  listen?: (server: net.Server) => Promise<void>,
): Promise<SftpServer> {
  const hostKeys = await c.hostKeys.all()
  const connections = new SocketConnections('SFTP', cfg, logger)
  const writeBudgets = new WriteBudgets(cfg.maxBufferedBytesPerConnection, cfg.maxBufferedBytesPerUser)
  const clients = new Set<Connection>()
  /** Connections by `address:port`, from accept until close, with how each is hung up. */
  const accepted = new Map<string, { conn: SocketConnection; hangUp: () => void }>()

  const ssh = new ssh2.Server(
    { hostKeys: hostKeys.map((k) => k.privateKey), ident: 'Wharf' },
    (client, info) => {
      const ip = info.ip
      const link = accepted.get(`${ip}:${info.port}`)
      if (!link) {
        client.end()
        return
      }
      const { conn } = link
      clients.add(client)
      const log = conn.log
      let session: ProtocolSession | null = null
      let writeBudget: WriteBudget | null = null
      const readStreams = new ReadStreams()
      let channels = 0
      let closeChannels: (() => Promise<void>)[] = []
      let failures = 0
      const authState = sftpAuthState(c, ip)
      let banned = false
      announceBan(client, authState.bannedFor)
      const end = () => {
        client.end()
        // A client that does not hang up when told to is cut off.
        setTimeout(() => conn.socket.destroy(), 1000).unref()
      }
      link.hangUp = end
      const activity = () => conn.activity()

      client.on('error', (err) => log.debug({ err }, 'SFTP connection error'))

      client.on('authentication', (ctx) => {
        void authenticate(c, ctx, ip, log, authState)
          .then(
            async (s) => {
              if (s === 'banned') {
                banned = true
                end()
                return
              }
              if (s === null) {
                if (ctx.method !== 'none' && ctx.method !== 'publickey' && ++failures >= MAX_AUTH_TRIES) end()
                return
              }
              if (conn.closed) {
                await s.end()
                return
              }
              const userKey = `u${s.principal.user?.id ?? `k${s.principal.apiKey?.id}`}`
              if (!conn.login(userKey, s.principal.user?.username)) {
                ctx.reject([])
                end()
                await s.end()
                return
              }
              session = s
              writeBudget = writeBudgets.connection(userKey)
              ctx.accept()
            },
            (err: unknown) => log.error({ err }, 'SFTP authentication failed'),
          )
          .catch((err: unknown) => {
            // The client went away while its login was checked.
            log.debug({ err }, 'SFTP login could not be answered')
            end()
          })
      })

      client.on('ready', () => {
        // A user disabled meanwhile is disconnected at the next request after the re-check.
        const login = new CheckedLogin(session!, (p) => c.services.fileSystem.as(p, 'sftp'), c.now)
        const current = () =>
          login.current().catch((err: unknown) => {
            end()
            throw err
          })
        client.on('session', (accept, reject) => {
          if (channels >= MAX_CHANNELS_PER_CONNECTION) {
            log.warn('SFTP channel refused: too many channels on this connection')
            reject()
            return
          }
          channels++
          const sess = accept()
          sess.once('close', () => channels--)
          sess.on('sftp', (acceptSftp) => {
            const sftp = acceptSftp()
            const served = serveSftp(sftp, {
              files: current,
              activity,
              logger: log,
              now: c.now,
              writeBudget: writeBudget!,
              readStreams,
              socket: conn.socket,
            })
            closeChannels.push(served.close)
            // The client is done sending: the channel closes (half-written files are dropped).
            sftp.on('end', () => sftp.end())
            sftp.on('close', () => void served.close())
          })
          // Checksums of one file (rclone's md5sum / sha1sum); every other command is refused.
          sess.on('exec', (acceptExec, rejectExec, info) => {
            const req = parseExec(info.command)
            if (!req) {
              rejectExec?.()
              return
            }
            activity()
            void runExec(acceptExec(), req, current, log)
          })
          for (const refused of ['shell', 'pty', 'env', 'x11', 'auth-agent', 'signal'] as const) {
            sess.on(refused, (_accept: unknown, reject?: () => void) => reject?.())
          }
          sess.on('subsystem', (_accept, reject) => reject())
        })
        client.on('tcpip', (_accept, reject) => reject())
        client.on('openssh.streamlocal', (_accept, reject) => reject())
        client.on('request', (_accept, reject) => reject?.())
      })

      client.on('close', () => {
        clients.delete(client)
        conn.close()
      })
      conn.onClose(() => {
        const channels = closeChannels
        closeChannels = []
        // A connection that offered only refused keys is one failed login of its address.
        const keyFailure =
          !session && !banned && authState.keyRefused && !authState.passwordTried
            ? c.services.loginDefender.recordFailure(c.site.id, ip, 'publickey')
            : undefined
        return Promise.all([keyFailure, ...channels.map((f) => f())]).then(() => session?.end())
      })
    },
  )

  // Sockets are accepted here, not by ssh2, so that the login deadline and the per-address cap
  // hold from the first byte: ssh2 tells of a connection only once the client has spoken.
  const server = net.createServer((socket) => {
    const key = `${socket.remoteAddress ?? ''}:${socket.remotePort}`
    const link = { hangUp: () => socket.destroy() }
    const conn = connections.accept(socket, socket.remoteAddress ?? '', {
      tooManyFromAddress: () => socket.destroy(),
      loginTimedOut: () => socket.destroy(),
      idle: () => link.hangUp(),
    })
    if (!conn) return
    accepted.set(key, Object.assign(link, { conn }))
    conn.onClose(() => accepted.delete(key))
    // Each WRITE is answered with a small status packet. With Nagle's algorithm on, the kernel
    // held each answer back until the client acknowledged the one before, and the client, busy
    // sending, delayed its acknowledgements: uploads ran at half their speed.
    socket.setNoDelay(true)
    ssh.injectSocket(socket)
  })

  await (listen?.(server) ??
    new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(cfg.port, cfg.host, () => {
        server.off('error', reject)
        resolve()
      })
    }))
  const addr = server.address() as AddressInfo
  return {
    host: addr.address,
    port: addr.port,
    hostKeys,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        for (const client of clients) client.end()
        for (const { socket } of connections.all()) if (!socket.destroyed) socket.end()
      })
      // Half-written files are dropped and sessions ended before the database closes.
      await connections.settled()
    },
  }
}
