import type { Routes } from '../route-types.js'
import { ErrorSchema } from '../schemas.js'

/**
 * Swagger 2 has no `null` type: a schema may name one type and mark itself `x-nullable`. The route
 * schemas say `type: [t, 'null']` (that is what validation and serialization need), so the
 * document rewrites each such pair into its Swagger 2 form.
 */
export function toSwagger2<T>(node: T): T {
  if (Array.isArray(node)) return node.map(toSwagger2) as T
  if (node === null || typeof node !== 'object') return node
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
    // Which service rule decides a refusal is the server's business, not the document's; and
    // Swagger 2 schemas have no $id (definitions are named by title).
    if (k === 'x-check' || k === '$id') continue
    out[k] = k === 'properties' ? withoutReadOnly(v as Record<string, unknown>) : toSwagger2(v)
  }
  // Swagger 2 has no anyOf: a union (POST /files answers a FileUploadPart or a File) is an object.
  if (Array.isArray(out['anyOf'])) {
    const titles = (out['anyOf'] as { title?: string }[]).map((o) => o.title ?? 'object')
    delete out['anyOf']
    out['type'] = 'object'
    out['description'] ??= `One of: ${titles.join(', ')}`
  }
  const type = out['type']
  if (Array.isArray(type)) {
    const types = type.filter((t) => t !== 'null')
    if (types.length < type.length) out['x-nullable'] = true
    if (types.length === 1) out['type'] = types[0]
    else delete out['type']
  }
  return out as T
}

/**
 * Request bodies accept some read-only fields back unchanged (the SDKs' `save()` sends them):
 * a client has nothing to send there, so the document leaves them out of the request models.
 */
function withoutReadOnly(props: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [name, schema] of Object.entries(props)) {
    if ((schema as { readOnly?: unknown } | null)?.readOnly !== true) out[name] = toSwagger2(schema)
  }
  return out
}

/** A body whose model has required fields is itself required. */
export function markRequiredBodies<T>(doc: T): T {
  const paths = (doc as { paths?: Record<string, Record<string, { parameters?: any[] }>> }).paths ?? {}
  for (const ops of Object.values(paths)) {
    for (const op of Object.values(ops)) {
      for (const p of op.parameters ?? []) {
        if (p.in === 'body' && (p.schema?.required?.length ?? 0) > 0) p.required = true
      }
    }
  }
  return doc
}

/**
 * Answers every operation can give before any route sees the request: Node's parser refuses a
 * request line and headers over its `maxHeaderSize` with 431, in Wharf's error body.
 */
export function withParserErrors<T>(doc: T): T {
  const paths = (doc as { paths?: Record<string, Record<string, { responses?: any }>> }).paths ?? {}
  const tooLarge = {
    description: 'Request header fields too large (request line and headers over 16 KiB by default)',
    schema: toSwagger2(ErrorSchema),
  }
  for (const ops of Object.values(paths)) {
    for (const op of Object.values(ops)) {
      if (op === null || typeof op !== 'object' || Array.isArray(op)) continue
      op.responses ??= {}
      op.responses['431'] ??= tooLarge
    }
  }
  return doc
}

/** GET /swagger_doc: the Swagger 2.0 document, generated from the route schemas themselves. */
export function swaggerRoutes(): Routes {
  return async (app) => {
    let doc: unknown
    app.get('/swagger_doc', { config: { auth: false }, schema: { hide: true } }, async () => {
      // Routes are all known once the server is ready, so the document never changes afterwards.
      doc ??= withParserErrors(markRequiredBodies(toSwagger2(app.swagger())))
      return doc
    })
  }
}
