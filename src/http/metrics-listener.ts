import crypto from 'node:crypto'
import http from 'node:http'
import * as prom from 'prom-client'
import { metrics } from '../metrics/metrics.js'

const sha256 = (s: string) => crypto.createHash('sha256').update(s).digest()

/**
 * The Prometheus scrape endpoint, `GET /metrics`, on a listener of its own (METRICS_HOST,
 * METRICS_PORT): never on the public HTTP port. With METRICS_TOKEN the scrape must send it as a
 * bearer token (compared in constant time); anything else is 401. Making one turns counting on.
 */
export function metricsServer(token: string | undefined): http.Server {
  metrics.turnOn(prom)
  const expected = token === undefined ? null : sha256(token)
  return http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res
        .writeHead(404, { 'content-type': 'text/plain; charset=utf-8' })
        .end('Not found: scrape GET /metrics\n')
      return
    }
    if (expected) {
      const given = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? ''
      if (!crypto.timingSafeEqual(sha256(given), expected)) {
        res
          .writeHead(401, {
            'content-type': 'text/plain; charset=utf-8',
            'www-authenticate': 'Bearer realm="metrics"',
          })
          .end('Send METRICS_TOKEN as a bearer token\n')
        return
      }
    }
    metrics.registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' })
        res.end(req.method === 'HEAD' ? undefined : text)
      },
      (err: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`${(err as Error).message}\n`)
      },
    )
  })
}
