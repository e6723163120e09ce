import net from 'node:net'
import tls from 'node:tls'
import { SessionCounter } from '../modules/auth/session-counter.js'
import { reply } from './ftp-errors.js'

export interface PassiveOptions {
  /** The address the listener binds: the one the control connection came in on. */
  bindAddress: string
  ports: { min: number; max: number } | null
  /** Only a connection from the control connection's own address is taken. */
  clientAddress: string
  timeoutMs: number
  /** Called once when the listener stops listening (its port is free again). */
  release?: () => void
}

/**
 * Passive listeners waiting for their data connection, counted per address and per user, so
 * that none takes more than its share of `FTP_PASV_PORTS`: a quarter of the range (at least
 * one port). Without a range, listeners take any free port and only the session caps apply.
 */
export class PassiveShares {
  private readonly byAddress = new SessionCounter<string>()
  private readonly byUser = new SessionCounter<number>()
  readonly share: number

  constructor(range: { min: number; max: number } | null) {
    this.share = range ? Math.max(1, Math.floor((range.max - range.min + 1) / 4)) : Number.POSITIVE_INFINITY
  }

  /** One more listener for `address` and `user`: its release, or null past either's share. */
  claim(address: string, user: number): (() => void) | null {
    const a = this.byAddress.claim(address, this.share)
    if (!a) return null
    const u = this.byUser.claim(user, this.share)
    if (!u) {
      a()
      return null
    }
    return () => {
      a()
      u()
    }
  }
}

/** Plain IPv4 for an IPv4-mapped IPv6 address, so that both sides of a comparison agree. */
export function plainAddress(address: string | undefined): string {
  const a = address ?? ''
  return a.startsWith('::ffff:') && net.isIPv4(a.slice(7)) ? a.slice(7) : a
}

/**
 * The listener of one passive data connection (PASV/EPSV). It takes the first connection from
 * the client's address and closes: a connection from elsewhere is dropped, as otherwise anyone
 * who guesses the port could read or plant a file (the "port theft" of RFC 2577).
 */
export class PassiveListener {
  private socket: net.Socket | null = null
  private waiting: ((s: net.Socket) => void) | null = null
  private closed = false
  private listening = true
  private readonly timer: NodeJS.Timeout

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
    private readonly opts: PassiveOptions,
  ) {
    server.on('connection', (s) => this.accept(s))
    // Unused, it stops listening after the data timeout, so a client cannot pile up listeners.
    this.timer = setTimeout(() => this.stopListening(), opts.timeoutMs)
    this.timer.unref()
  }

  /** The port is free again: counted no more against the client's share. */
  private stopListening(): void {
    if (!this.listening) return
    this.listening = false
    clearTimeout(this.timer)
    this.server.close()
    this.opts.release?.()
  }

  static async open(opts: PassiveOptions): Promise<PassiveListener> {
    const candidates = portCandidates(opts.ports)
    for (const port of candidates) {
      const server = net.createServer({ pauseOnConnect: true, noDelay: true })
      const ok = await new Promise<boolean>((resolve) => {
        server.once('error', () => resolve(false))
        server.listen({ host: opts.bindAddress, port, exclusive: true }, () => resolve(true))
      })
      if (ok) {
        server.on('error', () => undefined)
        return new PassiveListener(server, (server.address() as net.AddressInfo).port, opts)
      }
      server.close()
    }
    opts.release?.()
    throw reply(425, 'No passive port is free; try again later')
  }

  /**
   * The data connection, waited for if the client has not connected yet, with TLS when the
   * data is protected (PROT P): the client then starts a handshake on it.
   */
  async connection(secure: tls.SecureContext | null): Promise<net.Socket> {
    const raw = await this.waitForSocket()
    raw.resume()
    if (!secure) return raw
    const socket = new tls.TLSSocket(raw, { isServer: true, secureContext: secure })
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error('TLS handshake timed out')), this.opts.timeoutMs)
      const fail = (err: Error) => {
        clearTimeout(timer)
        socket.destroy()
        reject(reply(425, `TLS on the data connection failed: ${err.message}`))
      }
      socket.once('secure', () => {
        clearTimeout(timer)
        socket.off('error', fail)
        resolve()
      })
      socket.once('error', fail)
    })
    // TLS 1.3 session tickets go out once the 'secure' handlers have returned; data written before
    // them reaches clients ahead of the tickets, and OpenSSL clients (Python's ftplib) then fail
    // their TLS shutdown with "shutdown while in init". One turn of the event loop lets them out.
    await new Promise((resolve) => setImmediate(resolve))
    return socket
  }

  close(): void {
    this.closed = true
    this.stopListening()
    // A connection not yet handed to a transfer is dropped; one handed over is the transfer's.
    this.socket?.destroy()
    this.socket = null
  }

  private accept(s: net.Socket): void {
    s.on('error', () => undefined)
    if (this.socket || this.closed || plainAddress(s.remoteAddress) !== this.opts.clientAddress) {
      s.destroy()
      return
    }
    this.socket = s
    this.stopListening()
    const waiting = this.waiting
    this.waiting = null
    waiting?.(s)
  }

  private waitForSocket(): Promise<net.Socket> {
    if (this.socket) {
      const s = this.socket
      this.socket = null
      return Promise.resolve(s)
    }
    if (this.closed || !this.listening) {
      return Promise.reject(reply(425, 'Use PASV or EPSV first'))
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = null
        this.close()
        reject(reply(425, 'The data connection was not opened in time'))
      }, this.opts.timeoutMs)
      this.waiting = (s) => {
        clearTimeout(timer)
        this.socket = null
        resolve(s)
      }
    })
  }
}

/** Every port of the range once, from a random start (0 alone: any free port). */
function portCandidates(range: { min: number; max: number } | null): number[] {
  if (!range) return [0]
  const count = range.max - range.min + 1
  const first = Math.floor(Math.random() * count)
  return Array.from({ length: count }, (_, i) => range.min + ((first + i) % count))
}
