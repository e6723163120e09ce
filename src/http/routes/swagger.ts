import type { FastifyInstance } from 'fastify'

/** GET /swagger_doc: the Swagger 2.0 document, generated from the route schemas themselves. */
export function swaggerRoutes() {
  return async (app: FastifyInstance) => {
    app.get('/swagger_doc', { config: { auth: false }, schema: { hide: true } }, async () => app.swagger())
  }
}
