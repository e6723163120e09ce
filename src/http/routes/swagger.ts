import type { FastifyInstance } from 'fastify'

/**
 * Swagger 2 has no `null` type: a schema may name one type and mark itself `x-nullable`. The route
 * schemas say `type: [t, 'null']` (that is what validation and serialization need), so the
 * document rewrites each such pair into its Swagger 2 form.
 */
export function toSwagger2<T>(node: T): T {
  if (Array.isArray(node)) return node.map(toSwagger2) as T
  if (node === null || typeof node !== 'object') return node
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(node as Record<string, unknown>)) out[k] = toSwagger2(v)
  const type = out['type']
  if (Array.isArray(type)) {
    const types = type.filter((t) => t !== 'null')
    if (types.length < type.length) out['x-nullable'] = true
    if (types.length === 1) out['type'] = types[0]
    else delete out['type']
  }
  return out as T
}

/** GET /swagger_doc: the Swagger 2.0 document, generated from the route schemas themselves. */
export function swaggerRoutes() {
  return async (app: FastifyInstance) => {
    let doc: unknown
    app.get('/swagger_doc', { config: { auth: false }, schema: { hide: true } }, async () => {
      // Routes are all known once the server is ready, so the document never changes afterwards.
      doc ??= toSwagger2(app.swagger())
      return doc
    })
  }
}
