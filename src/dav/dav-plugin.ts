import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { refuseEncodedBody } from '../http/content-encoding.js'
import type { HttpContext } from '../http/http-context.js'
import { metrics } from '../metrics/metrics.js'
import { DavAuthenticator } from './dav-auth.js'
import type { DavContext } from './dav-context.js'
import { handleDavError } from './dav-errors.js'
import { DavPaths } from './dav-paths.js'
import type { DavSettings } from './dav-settings.js'
import { copyOrMove } from './handlers/copy-move.js'
import { lock, unlock } from './handlers/lock.js'
import { get, head, options, propfind } from './handlers/read.js'
import { mkcol, proppatch, put, remove } from './handlers/write.js'
import { LockTable } from './locks.js'

/** Methods Fastify does not route by default; each may carry a body (MKCOL's is refused with 415). */
const EXTRA_METHODS = ['PROPFIND', 'PROPPATCH', 'MKCOL', 'COPY', 'MOVE', 'LOCK', 'UNLOCK']

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>

/**
 * WebDAV (class 1 and 2) under `config.dav.prefix` of the HTTP server: the same files, users,
 * permissions, Actions (interface `dav`) and webhooks (protocol `dav`) through the file-system
 * facade. Its routes live in their own encapsulated plugin, with their own body handling (PUT
 * streams the raw request; nothing is buffered or parsed by Fastify), their own authentication
 * (HTTP Basic) and their own error bodies (WebDAV's, not the REST API's JSON).
 */
export async function registerDav(
  app: FastifyInstance,
  container: HttpContext,
  config: { dav: DavSettings; bodyLimitBytes: number },
): Promise<void> {
  for (const method of EXTRA_METHODS) app.addHttpMethod(method, { hasBody: true })
  const ctx: DavContext = {
    container,
    paths: new DavPaths(config.dav.prefix),
    locks: new LockTable(container.now),
    auth: new DavAuthenticator(
      container.services.protocolLogin,
      container.site.id,
      config.dav.authCacheSeconds * 1000,
      container.now,
    ),
    bodyLimit: config.bodyLimitBytes,
  }
  // WebDAV's sessions, as the metrics count them: the HTTP connections that have carried a signed-in
  // WebDAV request and are still open (clients such as davfs2 and Windows keep one for a mount).
  const davSockets = new WeakSet<object>()
  let davOpen = 0
  const removeSource = metrics.sessionSources.add(() => ({ interface: 'dav', open: davOpen }))
  app.addHook('onClose', async () => {
    removeSource()
    await ctx.auth.close()
  })
  // Microsoft Office asks OPTIONS of the server's root, wherever the tree is mounted, and opens
  // documents read-only unless the answer names WebDAV authoring.
  app.options('/', { schema: { hide: true } }, async (_request, reply) =>
    reply
      .headers({ DAV: '1, 2', 'MS-Author-Via': 'DAV', Allow: 'GET, HEAD, OPTIONS', 'Content-Length': '0' })
      .send(),
  )

  await app.register(
    async (dav) => {
      dav.removeAllContentTypeParsers()
      // Every body reaches its handler as the raw stream: a PUT of gigabytes is never buffered.
      dav.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined))
      dav.setErrorHandler(handleDavError)
      dav.addHook('onRequest', refuseEncodedBody)
      dav.addHook('onRequest', async (request, reply) => {
        // OPTIONS says only what the server can do: clients ask it before they have credentials.
        if (request.method === 'OPTIONS') return
        request.principal = await ctx.auth.principal(request.headers.authorization, request.ip)
        const socket = request.raw.socket
        if (!davSockets.has(socket)) {
          davSockets.add(socket)
          davOpen++
          socket.once('close', () => davOpen--)
        }
        const p = request.principal
        const release = container.rateLimiter.acquire(p.apiKey ? `k${p.apiKey.id}` : `s${p.sessionHash}`)
        reply.raw.once('close', release)
      })
      const routes: [string, Handler][] = [
        ['OPTIONS', options(ctx)],
        ['GET', get(ctx)],
        ['HEAD', head(ctx)],
        ['PUT', put(ctx)],
        ['DELETE', remove(ctx)],
        ['PROPFIND', propfind(ctx)],
        ['PROPPATCH', proppatch(ctx)],
        ['MKCOL', mkcol(ctx)],
        ['COPY', copyOrMove(ctx, 'COPY')],
        ['MOVE', copyOrMove(ctx, 'MOVE')],
        ['LOCK', lock(ctx)],
        ['UNLOCK', unlock(ctx)],
      ]
      for (const url of ['/', '/*']) {
        for (const [method, handler] of routes) {
          dav.route({ method, url, handler, exposeHeadRoute: false, schema: { hide: true } })
        }
      }
    },
    { prefix: config.dav.prefix },
  )
}
