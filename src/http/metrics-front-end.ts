import type http from 'node:http'
import type net from 'node:net'
import type { FrontEnd, Listen, PortSpec } from '../connections/front-end.js'

export interface MetricsSettings {
  host: string
  port: number
  token: string | undefined
}

/** The port the metrics listener binds, and the settings that name it. */
export function metricsPort(cfg: MetricsSettings): PortSpec {
  return { setting: 'METRICS_PORT', hostSetting: 'METRICS_HOST', host: cfg.host, port: cfg.port }
}

/** The Prometheus scrape endpoint as one of `wharf serve`'s front ends (METRICS_ENABLED). */
export function metricsFrontEnd(cfg: MetricsSettings): FrontEnd {
  let server: http.Server | null = null
  const address = () => {
    const a = server?.address() as net.AddressInfo | null | undefined
    return { host: cfg.host, port: a?.port ?? cfg.port }
  }
  return {
    name: 'metrics',
    port: metricsPort(cfg),
    async start(listen: Listen) {
      const { metricsServer } = await import('./metrics-listener.js')
      server = metricsServer(cfg.token)
      await listen(server)
    },
    address,
    describe() {
      const { host, port } = address()
      return [
        {
          fields: { address: `${host}:${port}`, token: cfg.token ? 'required' : 'none' },
          message: 'metrics are served at /metrics',
        },
      ]
    },
    cut() {
      server?.closeAllConnections()
    },
    async close() {
      const s = server
      if (!s) return
      await new Promise<void>((resolve) => s.close(() => resolve()))
    },
  }
}
