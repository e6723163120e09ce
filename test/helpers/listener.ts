import http from 'node:http'
import type { AddressInfo } from 'node:net'

/** One request a test listener received, with its raw body. */
export interface Received {
  method: string
  url: string
  headers: http.IncomingHttpHeaders
  body: string
  /** Parsed JSON body (webhook payloads are JSON). */
  json: any
  at: number
}

/** How the listener answers request number `n` (0-based): a status, or a misbehaviour. */
export type Answer =
  | number
  | { status: number; headers?: Record<string, string>; body?: string }
  | 'hang'
  | 'destroy'
/** May wait on async work, e.g. a read of the outbox while the delivery is still claimed. */
export type Responder = (req: Received, n: number) => Answer | Promise<Answer>

export interface TestListener {
  url: string
  received: Received[]
  /** Changes how later requests are answered. */
  answer(r: Responder): void
  /** Resolves once `count` requests have arrived; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<Received[]>
  close(): Promise<void>
}

/** A real HTTP listener on 127.0.0.1 (or another loopback address) that records every request. */
export async function startListener(
  responder: Responder = () => 200,
  host = '127.0.0.1',
): Promise<TestListener> {
  let respond = responder
  const received: Received[] = []
  const waiters: { count: number; resolve: () => void }[] = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8')
      let json: unknown
      try {
        json = JSON.parse(body)
      } catch {
        json = undefined
      }
      const r: Received = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body,
        json,
        at: Date.now(),
      }
      const n = received.length
      received.push(r)
      for (const w of waiters.filter((w) => received.length >= w.count)) w.resolve()
      let a: Answer
      try {
        a = await respond(r, n)
      } catch {
        a = 500
      }
      if (a === 'hang') return
      if (a === 'destroy') {
        req.socket.destroy()
        return
      }
      const answer = typeof a === 'number' ? { status: a } : a
      res.writeHead(answer.status, answer.headers ?? {})
      res.end(answer.body ?? '')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://${host}:${port}/hook`,
    received,
    answer: (r) => {
      respond = r
    },
    waitFor(count, timeoutMs = 10_000) {
      if (received.length >= count) return Promise.resolve(received.slice())
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`listener got ${received.length} of ${count} requests in ${timeoutMs} ms`)),
          timeoutMs,
        )
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer)
            resolve(received.slice())
          },
        })
      })
    },
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
