import { parentPort, workerData } from 'node:worker_threads'
import type { SenderReply, SenderRequest } from './threaded-sender.js'
import { type SenderOptions, WebhookSender } from './webhook-sender.js'

// The worker side of ThreadedSender: sends what the dispatcher's thread asks for and answers
// with the outcomes, several to a message.
const sender = new WebhookSender(workerData as SenderOptions)
const port = parentPort!
let replies: SenderReply[] = []
let flushQueued = false

function reply(r: SenderReply): void {
  replies.push(r)
  if (flushQueued) return
  flushQueued = true
  setImmediate(() => {
    flushQueued = false
    const batch = replies
    replies = []
    port.postMessage(batch)
  })
}

port.on('message', (batch: SenderRequest[] | 'close') => {
  if (batch === 'close') {
    void sender.close().then(() => port.close())
    return
  }
  for (const { id, req } of batch) {
    sender.send(req).then(
      (outcome) => reply({ id, outcome }),
      (err: unknown) => reply({ id, error: err instanceof Error ? err.message : String(err) }),
    )
  }
})
