import net from 'node:net'
import tls from 'node:tls'
import { reply } from './ftp-errors.js'

export interface PassiveOptions {
  /** The address the listener binds: the one the control connection came in on. */
  bindAddress: string
  ports: { min: number; max: number } | null
  /** Only a connection from the control connection's own address is taken. */
  clientAddress: string
  timeoutMs: number
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

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
    private readonly opts: PassiveOptions,
  ) {
    server.on('connection', (s) => this.accept(s))
    // Unused, it stops listening after the data timeout, so a client cannot pile up listeners.
    const timer = setTimeout(() => this.server.close(), opts.timeoutMs)
    timer.unref()
    server.on('close', () => clearTimeout(timer))
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
    this.server.close()
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
    this.server.close()
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
    if (this.closed || !this.server.listening) {
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
