import type { FastifyInstance } from 'fastify'
import type { Readiness } from '../readiness.js'

/**
 * `GET /healthz`: the process answers. `GET /readyz`: every part of the server is ready (503 with
 * the parts that are not). Both unauthenticated, outside the API's prefix and its rate limit,
 * for load balancers, service managers and container health checks (not in the API's Swagger
 * document: they are not part of the Files.com API).
 */
export function registerHealthRoutes(app: FastifyInstance, readiness: Readiness): void {
  const noStore = { 'cache-control': 'no-store' }
  app.get('/healthz', { schema: { hide: true } }, async (_request, reply) => {
    reply.headers(noStore)
    return { status: 'ok' }
  })
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const { ready, checks } = await readiness.report()
    reply.code(ready ? 200 : 503).headers(noStore)
    return { status: ready ? 'ready' : 'not ready', checks }
  })
}
