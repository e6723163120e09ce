import net from 'node:net'
import type { PortSpec } from '../connections/front-end.js'

/** A port Wharf cannot listen on, said in one line naming its setting, like a configuration error. */
export class PortUnavailableError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'PortUnavailableError'
  }
}

/**
 * A port bound before the server creates anything (the site, its administrator), so that a port
 * already in use stops the start before the one-time password is printed. The socket is handed
 * to the front end's own server once that is ready (`handTo`); a connection that arrives before
 * then waits, unread, and goes to the front end with the socket.
 */
export class BoundPort {
  private readonly early = new Set<net.Socket>()
  private handed = false

  private constructor(
    private readonly holder: net.Server,
    readonly spec: PortSpec,
  ) {
    holder.on('connection', (socket) => {
      this.early.add(socket)
      socket.once('close', () => this.early.delete(socket))
    })
  }

  /** The port actually bound (PORT=0 picks one). */
  get port(): number {
    return (this.holder.address() as net.AddressInfo).port
  }

  static async bind(spec: PortSpec): Promise<BoundPort> {
    const holder = net.createServer({
      pauseOnConnect: true,
      noDelay: true,
      allowHalfOpen: spec.allowHalfOpen,
    })
    await new Promise<void>((resolve, reject) => {
      holder.once('error', (err) => reject(unavailable(spec, err)))
      holder.listen({ host: spec.host, port: spec.port }, () => resolve())
    })
    holder.removeAllListeners('error')
    return new BoundPort(holder, spec)
  }

  /**
   * `server` listens on this port's socket from now on (Node's `listen(handle)`), and takes the
   * connections that waited.
   */
  async handTo(server: net.Server): Promise<void> {
    if (this.handed) throw new Error(`${this.spec.setting} was handed over already`)
    this.handed = true
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(this.holder, () => {
        server.off('error', reject)
        resolve()
      })
    })
    for (const socket of this.early) {
      server.emit('connection', socket)
      socket.resume()
    }
    this.early.clear()
  }

  /** Lets a port go that no front end took (a start that stopped on another port). */
  async release(): Promise<void> {
    if (this.handed) return
    for (const socket of this.early) socket.destroy()
    await new Promise<void>((resolve) => this.holder.close(() => resolve()))
  }
}

/**
 * Binds every port, or none: when one cannot be bound, those bound already are let go and the
 * error names the setting.
 */
export async function bindPorts(specs: PortSpec[]): Promise<BoundPort[]> {
  const results = await Promise.allSettled(specs.map((spec) => BoundPort.bind(spec)))
  const bound = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []))
  const failed = results.find((r) => r.status === 'rejected')
  if (failed) {
    await Promise.all(bound.map((b) => b.release()))
    throw failed.reason
  }
  return bound
}

function unavailable(spec: PortSpec, err: Error): Error {
  const code = (err as NodeJS.ErrnoException).code
  const where = `${spec.setting} ${spec.port} on ${spec.host}`
  if (code === 'EADDRINUSE')
    return new PortUnavailableError(
      `${where} is already in use: stop what listens there, or set ${spec.setting} to a free port`,
    )
  if (code === 'EACCES')
    return new PortUnavailableError(
      `${where} needs privileges Wharf does not have: set ${spec.setting} to a port above 1023`,
    )
  if (code === 'EADDRNOTAVAIL')
    return new PortUnavailableError(
      `${where}: ${spec.hostSetting} ${spec.host} is not an address of this machine`,
    )
  return err
}
