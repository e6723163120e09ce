import { Worker } from 'node:worker_threads'
import type { SenderOptions, WebhookOutcome, WebhookRequest } from './webhook-sender.js'

/** What the dispatcher needs of a sender. */
export interface Sender {
  send(req: WebhookRequest): Promise<WebhookOutcome>
  close(): Promise<void>
}

export interface SenderRequest {
  id: number
  req: WebhookRequest
}
export type SenderReply = { id: number; outcome: WebhookOutcome } | { id: number; error: string }

interface Waiting {
  resolve: (o: WebhookOutcome) => void
  reject: (err: Error) => void
}

/**
 * A WebhookSender on a thread of its own: HTTP work (sockets, parsing, TLS) is about half of a
 * delivery's CPU, and off the dispatcher's thread it runs beside the database work instead of
 * after it. Requests and outcomes cross in batches, one message per turn of the event loop. If
 * the thread dies, its requests fail (their notifications are claimed, and go out again when the
 * claim ends) and the next request starts a new thread. Needs the compiled JavaScript (dist/).
 */
export class ThreadedSender implements Sender {
  private worker: Worker | null = null
  private readonly waiting = new Map<number, Waiting>()
  private queue: SenderRequest[] = []
  private flushQueued = false
  private nextId = 1

  constructor(private readonly opts: Omit<SenderOptions, 'resolver' | 'now'>) {}

  send(req: WebhookRequest): Promise<WebhookOutcome> {
    return new Promise((resolve, reject) => {
      const id = this.nextId++
      this.waiting.set(id, { resolve, reject })
      this.queue.push({ id, req })
      if (this.flushQueued) return
      this.flushQueued = true
      setImmediate(() => {
        this.flushQueued = false
        const batch = this.queue
        this.queue = []
        this.thread().postMessage(batch)
      })
    })
  }

  async close(): Promise<void> {
    const w = this.worker
    this.worker = null
    if (!w) return
    const exited = new Promise((resolve) => w.once('exit', resolve))
    w.postMessage('close')
    // Closing lets kept-alive connections end; a thread that does not stop soon is ended.
    const timer = setTimeout(() => void w.terminate(), 2000)
    await exited
    clearTimeout(timer)
  }

  private thread(): Worker {
    if (this.worker) return this.worker
    const w = new Worker(new URL('./sender-thread.js', import.meta.url), { workerData: this.opts })
    w.unref()
    w.on('message', (batch: SenderReply[]) => {
      for (const r of batch) {
        const waiting = this.waiting.get(r.id)
        if (!waiting) continue
        this.waiting.delete(r.id)
        if ('outcome' in r) waiting.resolve(r.outcome)
        else waiting.reject(new Error(r.error))
      }
    })
    w.on('error', (err) => this.failAll(err))
    w.on('exit', () => {
      if (this.worker === w) this.worker = null
      this.failAll(new Error('the webhook sender thread stopped'))
    })
    this.worker = w
    return w
  }

  private failAll(err: Error): void {
    for (const [id, w] of this.waiting) {
      this.waiting.delete(id)
      w.reject(err)
    }
  }
}
