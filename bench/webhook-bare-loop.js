// The reference of the webhook benchmarks: a bare undici loop sending requests signed as Wharf
// signs them, with Wharf's concurrency, to the benchmark listener (bench/webhook-listener.js).
import path from 'node:path'
import { Agent } from 'undici'
import { cpuSeconds, root } from './harness.js'
import { listenerRate } from './webhook-listener-client.js'

const { signWebhook } = await import(path.join(root, 'dist/webhooks/webhook-signature.js'))
const { newMessageId } = await import(path.join(root, 'dist/webhooks/webhook-outbox.js'))

/**
 * `n` requests signed with `keys` ({ verificationToken, signingSecret }), `concurrency` at a time,
 * through an undici Agent like Wharf's, each an upload notification of the site `facts`
 * (siteFacts). Fails unless the listener answered every one 204 and counted `n`. Returns the rate
 * at the listener, the CPU seconds of the listener and of this process's sending, and the bytes.
 */
export async function bareLoop(listener, { keys, facts, n, concurrency, timeoutMs }) {
  const url = new URL(listener.url)
  const agent = new Agent({ connections: concurrency, pipelining: 1 })
  await listener.reset({ expect: n })
  const done = listener.next((m) => m.done, timeoutMs, 'end of the bare loop')
  done.catch(() => {}) // awaited below
  const cpu0 = await cpuSeconds(listener.proc.child.pid)
  const client0 = process.cpuUsage()
  let next = 0
  let failed = 0
  async function worker() {
    while (next < n) {
      const i = next++
      const payload = {
        accountname: facts.accountname,
        username: facts.username,
        operation: 'Upload',
        protocol: 'restapi',
        path: `bench-backlog/file-${String(i).padStart(7, '0')}.txt`,
        sourcepath: '',
        attempt: 1,
      }
      const signed = signWebhook(payload, newMessageId(), keys, Date.now())
      const res = await agent.request({
        origin: url.origin,
        path: url.pathname,
        method: 'POST',
        headers: signed.headers,
        body: signed.body,
      })
      for await (const _ of res.body);
      if (res.statusCode !== 204) failed++
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  await done
  const client = process.cpuUsage(client0)
  const listenerCpu = (await cpuSeconds(listener.proc.child.pid)) - cpu0
  await agent.close()
  const r = await listener.report()
  if (failed > 0 || r.count !== n) throw new Error(`bare loop: ${failed} failed, listener got ${r.count}`)
  return {
    rate: listenerRate(r),
    seconds: (r.last - r.first) / 1000,
    listenerCpu,
    clientCpu: (client.user + client.system) / 1e6,
    bytes: r.bytes,
  }
}
