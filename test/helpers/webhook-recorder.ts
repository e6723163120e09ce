import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Answer } from './listener.js'

/** One webhook request as received: its `webhook-id`, the payload's path and attempt. */
export interface Delivery {
  id: string
  path: string
  attempt: number
}

/** How to answer a delivery; may wait on async work, e.g. a read of the outbox. */
export type AsyncResponder = (d: Delivery) => Answer | Promise<Answer>

export interface WebhookRecorder {
  url: string
  deliveries: Delivery[]
  /** Changes how later requests are answered. */
  answer(r: AsyncResponder): void
  /** Resolves once `count` requests have arrived in all; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs: number): Promise<void>
  close(): Promise<void>
}

/**
 * A webhook listener on 127.0.0.1 for tests that run Wharf as child processes. Unlike
 * listener.ts, an answer may wait on a promise: a test can look at the outbox row while its
 * delivery is still out (and so still claimed by the process that sends it).
 */
export async function startWebhookRecorder(responder: AsyncResponder): Promise<WebhookRecorder> {
  let respond = responder
  const deliveries: Delivery[] = []
  const waiters: { count: number; resolve: () => void }[] = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      let json: any = {}
      try {
        json = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      } catch {
        // Recorded with no path: the test's expectations on paths then fail and say so.
      }
      const d: Delivery = { id: String(req.headers['webhook-id']), path: json.path, attempt: json.attempt }
      deliveries.push(d)
      for (const w of waiters.filter((w) => deliveries.length >= w.count)) w.resolve()
      let a: Answer
      try {
        a = await respond(d)
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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/hook`,
    deliveries,
    answer: (r) => {
      respond = r
    },
    waitFor(count, timeoutMs) {
      if (deliveries.length >= count) return Promise.resolve()
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(new Error(`listener got ${deliveries.length} of ${count} requests in ${timeoutMs} ms`)),
          timeoutMs,
        )
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer)
            resolve()
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
