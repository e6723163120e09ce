import type net from 'node:net'
import pino, { type Logger } from 'pino'
import { metrics } from '../metrics/metrics.js'
import { SessionCounter } from '../modules/auth/session-counter.js'

/** The limits of one socket front end, from its settings (`SFTP_*`, `FTP_*`). */
export interface ConnectionLimits {
  /** Open connections one address may hold (`*_MAX_SESSIONS_PER_IP`). */
  maxSessionsPerIp: number
  /** Logged-in connections one user may hold (`*_MAX_SESSIONS_PER_USER`). */
  maxSessionsPerUser: number
  /** From accept to login (`SFTP_LOGIN_TIMEOUT_MS`, `FTP_LOGIN_TIMEOUT_SECONDS`). */
  loginTimeoutMs: number
  /** Without a request, once logged in (`SFTP_IDLE_TIMEOUT_MS`, `FTP_IDLE_TIMEOUT_SECONDS`). */
  idleTimeoutMs: number
}

/**
 * How a front end says each refusal in its protocol's words (SFTP drops the socket or ends the
 * SSH connection, FTP answers 421). Each also ends the connection.
 */
export interface RefusalWords {
  /** The address already holds as many connections as allowed: this one is not counted. */
  tooManyFromAddress(): void
  /** Not logged in by the login deadline. */
  loginTimedOut(): void
  /** No request for the idle timeout after login. */
  idle(): void
  /** Work of the connection's own that is not idleness (an FTP transfer on its data connection): the idle timer starts again. */
  busy?(): boolean
}

/**
 * The connections of one socket front end (SFTP, FTP): the caps per address and per user, the
 * login deadline, the idle timer, the clean-up of a closed connection, and its log fields. The
 * front end keeps only its protocol: what it answers to a refusal (`RefusalWords`) and what its
 * own clean-up is (`Connection.onClose`).
 */
export class SocketConnections {
  private readonly byIp = new SessionCounter<string>()
  private readonly byUser = new SessionCounter<string>()
  private readonly open = new Set<Connection>()
  /** Clean-ups of closed connections (aborted uploads, ended sessions) still running. */
  private readonly cleanups = new Set<Promise<unknown>>()
  private readonly logger: Logger

  constructor(
    /** The protocol's name in log lines (`SFTP`); in lower case, the field of the connection's address. */
    readonly protocol: string,
    readonly limits: ConnectionLimits,
    logger?: Logger,
  ) {
    this.logger = logger ?? pino({ level: 'silent' })
    // Counted when scraped; a front end that is gone stops counting (and is forgotten).
    const self = new WeakRef(this)
    const iface = protocol.toLowerCase()
    const remove = metrics.sessionSources.add(() => {
      const open = self.deref()?.size
      if (open === undefined) remove()
      return { interface: iface, open: open ?? 0 }
    })
  }

  /**
   * Takes a socket just accepted, from `ip`: the connection, with its login deadline running, or
   * null when the address already holds its share (then refused in the front end's words).
   */
  accept(socket: net.Socket, ip: string, words: RefusalWords): Connection | null {
    const release = this.byIp.claim(ip, this.limits.maxSessionsPerIp)
    if (!release) {
      this.logger.warn(
        { [this.field]: { ip } },
        `${this.protocol} connection refused: too many connections from this address`,
      )
      words.tooManyFromAddress()
      return null
    }
    const log = this.logger.child({ [this.field]: { ip, port: socket.remotePort } })
    const conn = new Connection(this, socket, ip, log, words, release)
    this.open.add(conn)
    socket.once('close', () => conn.close())
    return conn
  }

  /** Connections accepted and not closed yet. */
  get size(): number {
    return this.open.size
  }

  /** Every open connection. */
  all(): Connection[] {
    return [...this.open]
  }

  /** Resolves once the clean-up of every closed connection has finished. */
  async settled(): Promise<void> {
    await Promise.all([...this.cleanups])
  }

  /** @internal Counts a logged-in user: the release, or null past the user's cap. */
  claimUser(userKey: string): (() => void) | null {
    return this.byUser.claim(userKey, this.limits.maxSessionsPerUser)
  }

  /** @internal A connection has closed: it no longer counts, and its clean-up is awaited by `settled`. */
  closed(conn: Connection, cleanup: Promise<unknown>): void {
    this.open.delete(conn)
    this.cleanups.add(cleanup)
    void cleanup.finally(() => this.cleanups.delete(cleanup))
  }

  private get field(): string {
    return this.protocol.toLowerCase()
  }
}

/** One accepted socket of a front end, from accept to close. */
export class Connection {
  private timer: NodeJS.Timeout | undefined
  private releases: (() => void)[]
  private readonly cleanups: (() => unknown)[] = []
  private loggedInAt = false
  private isClosed = false

  constructor(
    private readonly owner: SocketConnections,
    readonly socket: net.Socket,
    readonly ip: string,
    /** The connection's logger: its address and port under the protocol's field (`{ sftp: { ip, port } }`). */
    readonly log: Logger,
    private readonly words: RefusalWords,
    releaseIp: () => void,
  ) {
    this.releases = [releaseIp]
    this.arm(owner.limits.loginTimeoutMs, () => words.loginTimedOut())
  }

  get closed(): boolean {
    return this.isClosed
  }

  get loggedIn(): boolean {
    return this.loggedInAt
  }

  /**
   * The user (`userKey`, named `username` in the log) has logged in: the connection counts against
   * the user's cap, and the idle timer replaces the login deadline. False when the user already
   * has as many connections as allowed: the front end refuses the login in its own words.
   */
  login(userKey: string, username?: string): boolean {
    if (this.isClosed) return false
    const release = this.owner.claimUser(userKey)
    if (!release) {
      this.log.warn({ user: username }, `${this.owner.protocol} login refused: too many sessions`)
      return false
    }
    this.releases.push(release)
    this.loggedInAt = true
    this.activity()
    return true
  }

  /** A request came: the idle timer starts again (once logged in). */
  activity(): void {
    if (!this.loggedInAt || this.isClosed) return
    this.arm(this.owner.limits.idleTimeoutMs, () => {
      if (this.words.busy?.()) {
        this.activity()
        return
      }
      this.log.info(`${this.owner.protocol} connection idle for too long: closed`)
      this.words.idle()
    })
  }

  /** Runs `cleanup` when the connection closes (at once if it has); the front end's `settled` waits for it. */
  onClose(cleanup: () => unknown): void {
    if (this.isClosed) this.owner.closed(this, run([cleanup], this.log, this.owner.protocol))
    else this.cleanups.push(cleanup)
  }

  /**
   * The connection is over (its socket closed, or the front end ended it): once, however often it
   * is called, its timer stops, it no longer counts for its address or user, and its clean-ups run.
   */
  close(): void {
    if (this.isClosed) return
    this.isClosed = true
    clearTimeout(this.timer)
    this.timer = undefined
    for (const release of this.releases) release()
    this.releases = []
    const cleanups = this.cleanups.splice(0)
    this.owner.closed(this, run(cleanups, this.log, this.owner.protocol))
  }

  /** (Re)starts the one timer: the login deadline before login, the idle timeout after. */
  private arm(ms: number, fire: () => void): void {
    clearTimeout(this.timer)
    this.timer = setTimeout(fire, ms)
    this.timer.unref()
  }
}

async function run(cleanups: (() => unknown)[], log: Logger, protocol: string): Promise<void> {
  await Promise.all(cleanups.map(async (f) => f())).catch((err: unknown) =>
    log.error({ err }, `${protocol} clean-up failed`),
  )
}
