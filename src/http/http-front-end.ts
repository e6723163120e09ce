import type { FastifyInstance } from 'fastify'
import type { FrontEnd, Listen, PortSpec } from '../connections/front-end.js'

/** What the start-up log says of the HTTP front end. */
export interface HttpListening {
  host: string
  port: number
  /** BASE_URL. */
  url: () => string
  database: string
  dataDir: string
  /** WebDAV's prefix when it is served. */
  davPrefix: string | null
}

/** The port HTTP listens on, and the settings that name it; Node's HTTP server allows half-open connections. */
export function httpPort(at: { host: string; port: number }): PortSpec {
  return { setting: 'PORT', hostSetting: 'HOST', host: at.host, port: at.port, allowHalfOpen: true }
}

/**
 * The HTTP application (the REST API, the web interface and WebDAV) as one of `wharf serve`'s
 * front ends.
 */
export function httpFrontEnd(app: FastifyInstance, listening: HttpListening): FrontEnd {
  return {
    name: 'http',
    port: httpPort(listening),
    async start(listen: Listen) {
      await app.ready()
      await listen(app.server)
    },
    address() {
      const a = app.server.address()
      return typeof a === 'object' && a
        ? { host: a.address, port: a.port }
        : { host: listening.host, port: 0 }
    },
    describe() {
      const url = listening.url()
      return [
        {
          fields: { url, database: listening.database, dataDir: listening.dataDir },
          message: 'Wharf is listening',
        },
        ...(listening.davPrefix !== null
          ? [{ fields: { url: `${url}${listening.davPrefix}/` }, message: 'WebDAV is served' }]
          : []),
      ]
    },
    cut() {
      app.server.closeAllConnections()
    },
    async close() {
      // Fastify closes the keep-alive connections that are idle when closing starts; one whose last
      // response is still finishing goes idle a moment later and would hold the close open for the
      // whole keep-alive timeout (72 s). Sweeping idle connections until closed ends those too.
      const sweep = setInterval(() => app.server.closeIdleConnections(), 100)
      try {
        await app.close()
      } finally {
        clearInterval(sweep)
      }
    },
  }
}
