import net, { type AddressInfo } from 'node:net'
import type { Logger } from 'pino'
import ssh2, { type Connection, type Session } from 'ssh2'
import { listenOn } from '../connections/front-end.js'
import { type Connection as SocketConnection, SocketConnections } from '../connections/socket-connections.js'
import { CheckedLogin } from '../modules/auth/checked-login.js'
import type { ProtocolSession } from '../modules/auth/protocol-login.js'
import type { UserFileSystem } from '../modules/files/vfs/file-system.js'
import type { FrontEndContext } from '../modules/services.js'
import type { HostKey, HostKeys } from '../modules/ssh/host-keys.js'
import { parseExec, runExec } from './sftp-exec.js'
import { announceBan, authenticate, MAX_AUTH_TRIES, type SftpAuthState, sftpAuthState } from './sftp-login.js'
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
  /** Destroys every connection at once (the shutdown deadline). */
  cut(): void
  close(): Promise<void>
}

type SftpContext = FrontEndContext & { hostKeys: HostKeys }

/** A socket accepted by the listener, until ssh2 tells of its client, with how it is hung up. */
interface Link {
  conn: SocketConnection
  hangUp: () => void
}

/** What every connection of one SFTP server shares. */
interface Shared {
  c: SftpContext
  writeBudgets: WriteBudgets
  clients: Set<Connection>
  /** Connections by `address:port`, from accept until close, with how each is hung up. */
  accepted: Map<string, Link>
}

/** One SSH connection, from its first packet to its close. */
interface Client {
  client: Connection
  conn: SocketConnection
  ip: string
  log: Logger
  session: ProtocolSession | null
  writeBudget: WriteBudget | null
  readStreams: ReadStreams
  channels: number
  closeChannels: (() => Promise<void>)[]
  failures: number
  authState: SftpAuthState
  banned: boolean
  /** Asks the client to hang up, and cuts it off if it does not. */
  end: () => void
  activity: () => void
}

/**
 * The SFTP front end: an SSH server (ssh2) that offers the `sftp` subsystem and nothing else,
 * over the file-system facade. Logins are those of POST /sessions, or a registered public key.
 */
export async function startSftp(
  c: SftpContext,
  cfg: SftpSettings,
  logger: Logger,
  /** Listens on a port bound before start-up (the server's); by default on cfg.host:cfg.port. */
  listen?: (server: net.Server) => Promise<void>,
): Promise<SftpServer> {
  const hostKeys = await c.hostKeys.all()
  const connections = new SocketConnections('SFTP', cfg, logger)
  const shared: Shared = {
    c,
    writeBudgets: new WriteBudgets(cfg.maxBufferedBytesPerConnection, cfg.maxBufferedBytesPerUser),
    clients: new Set<Connection>(),
    accepted: new Map<string, Link>(),
  }
  const ssh = new ssh2.Server(
    { hostKeys: hostKeys.map((k) => k.privateKey), ident: 'Wharf' },
    (client, info) => serveClient(shared, client, info),
  )
  const server = acceptSockets(ssh, connections, shared.accepted)
  await (listen ?? listenOn(cfg))(server)
  const addr = server.address() as AddressInfo
  return {
    host: addr.address,
    port: addr.port,
    hostKeys,
    cut() {
      for (const { socket } of connections.all()) socket.destroy()
    },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        for (const client of shared.clients) client.end()
        for (const { socket } of connections.all()) if (!socket.destroyed) socket.end()
      })
      // Half-written files are dropped and sessions ended before the database closes.
      await connections.settled()
    },
  }
}

/**
 * The listener. Sockets are accepted here, not by ssh2, so that the login deadline and the
 * per-address cap hold from the first byte: ssh2 tells of a connection only once the client has spoken.
 */
function acceptSockets(
  ssh: ssh2.Server,
  connections: SocketConnections,
  accepted: Map<string, Link>,
): net.Server {
  return net.createServer((socket) => {
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
}

/** One SSH client as ssh2 tells of it: its login, then its channels, then its clean-up. */
function serveClient(shared: Shared, client: Connection, info: ssh2.ClientInfo): void {
  const { c } = shared
  const ip = info.ip
  const link = shared.accepted.get(`${ip}:${info.port}`)
  if (!link) {
    client.end()
    return
  }
  const { conn } = link
  shared.clients.add(client)
  const authState = sftpAuthState(c, ip)
  const state: Client = {
    client,
    conn,
    ip,
    log: conn.log,
    session: null,
    writeBudget: null,
    readStreams: new ReadStreams(),
    channels: 0,
    closeChannels: [],
    failures: 0,
    authState,
    banned: false,
    end: () => {
      client.end()
      // A client that does not hang up when told to is cut off.
      setTimeout(() => conn.socket.destroy(), 1000).unref()
    },
    activity: () => conn.activity(),
  }
  announceBan(client, authState.bannedFor)
  link.hangUp = state.end

  client.on('error', (err) => state.log.debug({ err }, 'SFTP connection error'))
  client.on('authentication', (ctx) => onAuthentication(shared, state, ctx))
  client.on('ready', () => onReady(c, state))
  client.on('close', () => {
    shared.clients.delete(client)
    conn.close()
  })
  conn.onClose(() => {
    const channels = state.closeChannels
    state.closeChannels = []
    // A connection that offered only refused keys is one failed login (`key_mismatch`, or
    // `username_not_found` for a name that is no user's), scored against its address.
    const keyFailure =
      !state.session && !state.banned && authState.keyRefused && !authState.passwordTried
        ? recordKeyFailure(c, ip, authState.keyUsername).catch((err: unknown) =>
            state.log.error({ err }, 'SFTP key failure could not be recorded'),
          )
        : undefined
    return Promise.all([keyFailure, ...channels.map((f) => f())]).then(() => state.session?.end())
  })
}

/** One login attempt: accepted (within the per-user cap), refused, or the end of a banned client. */
function onAuthentication(shared: Shared, state: Client, ctx: ssh2.AuthContext): void {
  const { conn, log, end } = state
  void authenticate(shared.c, ctx, state.ip, log, state.authState)
    .then(
      async (s) => {
        if (s === 'banned') {
          state.banned = true
          end()
          return
        }
        if (s === null) {
          if (ctx.method !== 'none' && ctx.method !== 'publickey' && ++state.failures >= MAX_AUTH_TRIES) end()
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
        state.session = s
        state.writeBudget = shared.writeBudgets.connection(userKey)
        ctx.accept()
      },
      (err: unknown) => log.error({ err }, 'SFTP authentication failed'),
    )
    .catch((err: unknown) => {
      // The client went away while its login was checked.
      log.debug({ err }, 'SFTP login could not be answered')
      end()
    })
}

/** A logged-in client: session channels are served, every other request refused. */
function onReady(c: SftpContext, state: Client): void {
  const { client, end } = state
  // A user disabled meanwhile is disconnected at the next request after the re-check.
  const login = new CheckedLogin(state.session!, (p) => c.services.fileSystem.as(p, 'sftp'), c.now)
  const current = () =>
    login.current().catch((err: unknown) => {
      end()
      throw err
    })
  client.on('session', (accept, reject) => {
    if (state.channels >= MAX_CHANNELS_PER_CONNECTION) {
      state.log.warn('SFTP channel refused: too many channels on this connection')
      reject()
      return
    }
    state.channels++
    const sess = accept()
    sess.once('close', () => state.channels--)
    serveChannel(c, state, sess, current)
  })
  client.on('tcpip', (_accept, reject) => reject())
  client.on('openssh.streamlocal', (_accept, reject) => reject())
  client.on('request', (_accept, reject) => reject?.())
}

/** One session channel: the `sftp` subsystem, a checksum command, or a refusal. */
function serveChannel(
  c: SftpContext,
  state: Client,
  sess: Session,
  current: () => Promise<UserFileSystem>,
): void {
  const { activity, log } = state
  sess.on('sftp', (acceptSftp) => {
    const sftp = acceptSftp()
    const served = serveSftp(sftp, {
      files: current,
      activity,
      logger: log,
      now: c.now,
      writeBudget: state.writeBudget!,
      readStreams: state.readStreams,
      socket: state.conn.socket,
    })
    state.closeChannels.push(served.close)
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
}

/** Records a connection that ended with only refused keys as a `failedlogin` Action. */
async function recordKeyFailure(c: FrontEndContext, ip: string, username: string): Promise<void> {
  const user = await c.services.users.users.findByUsername(c.site.id, username)
  const ctx = {
    siteId: c.site.id,
    userId: user?.id ?? null,
    username: user?.username ?? username.toLowerCase(),
    ip,
    interface: 'sftp',
  }
  await c.services.access.recordRefusal(ctx, user ? 'key_mismatch' : 'username_not_found')
}
