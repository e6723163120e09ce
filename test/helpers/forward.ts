import http from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * Passes one request on to the HTTP server at `upstream` unchanged (but for Host) and its answer
 * back, as the proxies in front of a test server do. `body`: what the caller already read of the
 * request; without it the request is streamed through. A failing upstream gives 502.
 */
export function forward(
  upstream: URL,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  body?: Buffer,
): void {
  const out = http.request(
    {
      host: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, host: upstream.host },
    },
    (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers)
      up.pipe(res)
    },
  )
  out.on('error', () => {
    if (!res.headersSent) res.writeHead(502)
    res.end()
  })
  if (body === undefined) req.pipe(out)
  else out.end(body)
}

/** Listens on a free port of 127.0.0.1; `close` also drops open keep-alive connections. */
export async function listenLoopback(
  server: http.Server,
): Promise<{ port: number; close: () => Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
