import net, { type AddressInfo } from 'node:net'
import type { Logger } from 'pino'
import ssh2, { type Connection } from 'ssh2'
import { CheckedLogin } from '../modules/auth/checked-login.js'
import type { ProtocolSession } from '../modules/auth/protocol-login.js'
import { SessionCounter } from '../modules/auth/session-counter.js'
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
  const byIp = new SessionCounter<string>()
  const byUser = new SessionCounter<string>()
  const writeBudgets = new WriteBudgets(cfg.maxBufferedBytesPerConnection, cfg.maxBufferedBytesPerUser)
  const connections = new Set<Connection>()
  /** Sockets by `address:port`, from accept until close, with their login deadline. */
  const sockets = new Map<string, { socket: net.Socket; loginTimer: NodeJS.Timeout }>()
  /** Clean-ups of closed connections (aborted uploads, ended sessions) still running. */
  const cleanups = new Set<Promise<unknown>>()

  const ssh = new ssh2.Server(
    { hostKeys: hostKeys.map((k) => k.privateKey), ident: 'Wharf' },
    (client, info) => {
      const ip = info.ip
      connections.add(client)
      const releases: (() => void)[] = []
      const tcp = sockets.get(`${ip}:${info.port}`)
      const log = logger.child({ sftp: { ip, port: info.port } })
      let session: ProtocolSession | null = null
      let writeBudget: WriteBudget | null = null
      const readStreams = new ReadStreams()
      let channels = 0
      let closeChannels: (() => Promise<void>)[] = []
      let failures = 0
      let closed = false
      const authState = sftpAuthState(c, ip)
      let banned = false
      announceBan(client, authState.bannedFor)
      let idle: NodeJS.Timeout | undefined
      const end = () => {
        client.end()
        // A client that does not hang up when told to is cut off.
        setTimeout(() => tcp?.socket.destroy(), 1000).unref()
      }

      client.on('error', (err) => log.debug({ err }, 'SFTP connection error'))
      const activity = () => {
        clearTimeout(idle)
        idle = setTimeout(() => {
          log.info('SFTP connection idle for too long: closed')
          end()
        }, cfg.idleTimeoutMs)
      }

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
              if (closed) {
                await s.end()
                return
              }
              const userKey = `u${s.principal.user?.id ?? `k${s.principal.apiKey?.id}`}`
              const release = byUser.claim(userKey, cfg.maxSessionsPerUser)
              if (!release) {
                log.warn({ user: s.principal.user?.username }, 'SFTP login refused: too many sessions')
                ctx.reject([])
                end()
                await s.end()
                return
              }
              releases.push(release)
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
        clearTimeout(tcp?.loginTimer)
        activity()
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
              socket: tcp?.socket,
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
        closed = true
        connections.delete(client)
        clearTimeout(idle)
        for (const r of releases) r()
        const channels = closeChannels
        closeChannels = []
        // A connection that offered only refused keys is one failed login of its address.
        const keyFailure =
          !session && !banned && authState.keyRefused && !authState.passwordTried
            ? c.services.loginDefender.recordFailure(c.site.id, ip, 'publickey')
            : undefined
        const cleanup = Promise.all([keyFailure, ...channels.map((f) => f())])
          .then(() => session?.end())
          .catch((err: unknown) => log.error({ err }, 'SFTP clean-up failed'))
        cleanups.add(cleanup)
        void cleanup.finally(() => cleanups.delete(cleanup))
      })
    },
  )

  // Sockets are accepted here, not by ssh2, so that the login deadline and the per-address cap
  // hold from the first byte: ssh2 tells of a connection only once the client has spoken.
  const server = net.createServer((socket) => {
    const ip = socket.remoteAddress ?? ''
    const key = `${ip}:${socket.remotePort}`
    const release = byIp.add(ip)
    const loginTimer = setTimeout(() => socket.destroy(), cfg.loginTimeoutMs)
    sockets.set(key, { socket, loginTimer })
    socket.once('close', () => {
      release()
      clearTimeout(loginTimer)
      sockets.delete(key)
    })
    if (byIp.count(ip) > cfg.maxSessionsPerIp) {
      logger.warn({ sftp: { ip } }, 'SFTP connection refused: too many connections from this address')
      socket.destroy()
      return
    }
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
        for (const conn of connections) conn.end()
        for (const { socket } of sockets.values()) if (!socket.destroyed) socket.end()
      })
      // Half-written files are dropped and sessions ended before the database closes.
      await Promise.all([...cleanups])
    },
  }
}
