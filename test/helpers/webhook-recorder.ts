import { type Answer, startListener } from './listener.js'

/** One webhook request as received: its `webhook-id`, the payload's path and attempt, its `Webhook-Sequence`. */
export interface Delivery {
  id: string
  path: string
  attempt: number
  sequence: number | undefined
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
 * A webhook listener on 127.0.0.1 for tests that run Wharf as child processes: listener.ts,
 * recording each request as the delivery of a path under its `webhook-id`.
 */
export async function startWebhookRecorder(responder: AsyncResponder): Promise<WebhookRecorder> {
  let respond = responder
  const deliveries: Delivery[] = []
  const listener = await startListener((r) => {
    // A body that is not JSON is recorded with no path: the test's expectations on paths fail.
    const seq = r.headers['webhook-sequence']
    const d: Delivery = {
      id: String(r.headers['webhook-id']),
      path: r.json?.path,
      attempt: r.json?.attempt,
      sequence: seq === undefined ? undefined : Number(seq),
    }
    deliveries.push(d)
    return respond(d)
  })
  return {
    url: listener.url,
    deliveries,
    answer: (r) => {
      respond = r
    },
    waitFor: async (count, timeoutMs) => {
      await listener.waitFor(count, timeoutMs)
    },
    close: () => listener.close(),
  }
}
