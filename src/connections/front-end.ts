import type net from 'node:net'

/** A port a front end listens on, with the settings that name it (for the operator's message). */
export interface PortSpec {
  /** PORT, SFTP_PORT, FTP_PORT, METRICS_PORT. */
  setting: string
  /** HOST, SFTP_HOST, FTP_HOST. */
  hostSetting: string
  host: string
  port: number
  /** As the front end's own server accepts them (Node's HTTP server: half-open allowed). */
  allowHalfOpen?: boolean
}

/** Makes a front end's server listen: on a port bound before start-up (the server's), or its own. */
export type Listen = (server: net.Server) => Promise<void>

/** A line of the start-up log that tells the operator where a front end listens. */
export interface ListeningLine {
  fields: Record<string, unknown>
  message: string
}

/**
 * One protocol's listener, as `wharf serve` starts and stops it: SFTP, FTP and HTTP (which carries
 * WebDAV) have this one shape, so the server binds their ports, starts them and stops them alike.
 */
export interface FrontEnd {
  readonly name: 'http' | 'sftp' | 'ftp' | 'metrics'
  /** The port it listens on and the settings that name it (bound before anything is created). */
  readonly port: PortSpec
  /** Gets ready and listens through `listen`; its connections are served from then on. */
  start(listen: Listen): Promise<void>
  /** Where it listens (the port actually bound). */
  address(): { host: string; port: number }
  /** The start-up log's lines about it ("SFTP is listening", ...). */
  describe(): ListeningLine[]
  /** Stops listening and ends its connections gracefully; does nothing before it started. */
  close(): Promise<void>
  /**
   * Ends at once every connection still open (the shutdown deadline has passed): their requests
   * and transfers stop as if the client had gone, so that `close()` resolves.
   */
  cut(): void
}

/** Listens on the host and port of `spec` itself (a front end started without a bound port). */
export function listenOn(spec: { host: string; port: number }): Listen {
  return (server) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen({ host: spec.host, port: spec.port }, () => {
        server.off('error', reject)
        resolve()
      })
    })
}
