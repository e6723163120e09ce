import fs from 'node:fs'
import path from 'node:path'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance } from 'fastify'

/**
 * The web interface's own policy: it loads nothing from other origins (no fonts, no CDNs) and
 * talks only to this server's API, and to the origins its upload URLs lead to (`connectTo`: an
 * S3 bucket in direct mode).
 */
export function webCsp(connectTo: string[] = []): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data: blob:",
    // A PDF's preview: the file fetched as a blob, shown in a frame.
    'frame-src blob:',
    ["connect-src 'self'", ...connectTo].join(' '),
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ')
}

export const WEB_CSP = webCsp()

function securityHeaders(connectTo: string[]) {
  return {
    'content-security-policy': webCsp(connectTo),
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
  }
}

/**
 * Serves the built web interface (`npm run build` writes it to dist/web) at `/`: index.html is
 * never cached, the hashed files under /assets/ are cached for good. Without a build, `/` says
 * how to make one instead of failing.
 */
export async function registerWebUi(
  app: FastifyInstance,
  webDir: string,
  connectTo: string[] = [],
): Promise<void> {
  const SECURITY_HEADERS = securityHeaders(connectTo)
  const indexFile = path.join(webDir, 'index.html')
  if (!fs.existsSync(indexFile)) {
    app.get('/', { schema: { hide: true } }, async (_request, reply) =>
      reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send(`The web interface is not built: run \`npm run build\` (it writes ${webDir}).\n`),
    )
    return
  }
  const index = await fs.promises.readFile(indexFile)
  app.get('/', { schema: { hide: true } }, async (_request, reply) =>
    reply
      .headers({ ...SECURITY_HEADERS, 'cache-control': 'no-cache' })
      .type('text/html; charset=utf-8')
      .send(index),
  )
  // A share link's page (`{BASE_URL}/f/<code>`) for its recipients: the page itself asks the API
  // about the code, so every code gets the same page and an unknown one is told so there.
  const shareFile = path.join(webDir, 'share.html')
  if (fs.existsSync(shareFile)) {
    const share = await fs.promises.readFile(shareFile)
    app.get('/f/:code', { schema: { hide: true } }, async (_request, reply) =>
      reply
        .headers({ ...SECURITY_HEADERS, 'cache-control': 'no-cache' })
        .type('text/html; charset=utf-8')
        .send(share),
    )
  }
  await app.register(fastifyStatic, {
    root: webDir,
    prefix: '/',
    // One route per built file, read once at start: no catch-all route competes with the API.
    wildcard: false,
    index: false,
    // Cache-Control is ours (setHeaders): hashed assets for good, everything else revalidated.
    cacheControl: false,
    schemaHide: true,
    setHeaders(res, filePath) {
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value)
      const hashed = filePath.includes(`${path.sep}assets${path.sep}`)
      res.setHeader('cache-control', hashed ? 'public, max-age=31536000, immutable' : 'no-cache')
    },
  })
}
