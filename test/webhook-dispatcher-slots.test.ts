import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { RetryPolicy } from '../src/webhooks/retry-policy.js'
import { WebhookDispatcher } from '../src/webhooks/webhook-dispatcher.js'
import { enqueueNotification } from '../src/webhooks/webhook-outbox.js'
import { startListener, type TestListener } from './helpers/listener.js'
import { call, dialects, useServer } from './helpers/server.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * The dispatcher's slots: notifications claimed ahead of them start as slots free, a failing
 * listener still gets one request at a time, and a stop gives back what was claimed ahead.
 */
describe.each(dialects)('dispatcher slots (%s)', (dialect) => {
  let listener: TestListener
  /** Requests the listener holds unanswered, and how many it held as each one arrived. */
  let open = 0
  let openAtArrival: number[] = []
  let status = 204
  let holdMs = 0

  const s = useServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })
  beforeAll(async () => {
    // These tests run dispatchers of their own, with no competitor.
    await s.container.webhooks.dispatcher.stop()
    listener = await startListener(async () => {
      openAtArrival.push(open)
      open++
      await sleep(holdMs)
      open--
      return status
    })
    const body = { url: listener.url, triggers: ['Create Folder'], enabled: true }
    expect((await call(s, 'PATCH', '/webhook_settings', { key: s.adminKey, body })).status).toBe(200)
  })
  afterAll(async () => {
    await listener?.close()
  })
  beforeEach(async () => {
    await s.container.db.deleteFrom('webhook_attempts').execute()
    await s.container.db.deleteFrom('webhook_notifications').execute()
    listener.received.length = 0
    openAtArrival = []
  })

  async function enqueue(n: number, prefix: string) {
    const actor = { siteId: s.container.site.id, userId: null, username: 'admin', interface: 'restapi' }
    for (let i = 0; i < n; i++) {
      const facts = { action: 'create', path: `${prefix}-${i}`, targets: [{ type: 'folder' }] }
      await enqueueNotification(s.container.db, actor, 0, facts, Date.now())
    }
  }

  function dispatcher(concurrency: number) {
    return new WebhookDispatcher(
      s.container.db,
      s.container.webhooks.sender,
      // No retry within a test.
      new RetryPolicy([3600]),
      Date.now,
      { concurrency, leaseMs: 60_000, pollMs: 100 },
    )
  }

  function outbox() {
    return s.container.db
      .selectFrom('webhook_notifications')
      .select(['path', 'state', 'attempts', 'lease_owner'])
      .orderBy('id')
      .execute()
  }

  it('sends to a failing listener one request at a time, also what was claimed before it failed', async () => {
    status = 500
    holdMs = 50
    await enqueue(20, 'failing')
    const d = dispatcher(8)
    await d.start()
    try {
      await listener.waitFor(20, 20_000)
    } finally {
      await d.stop()
    }
    // Eight went out at once, and two more as the first two failures came back; from the third
    // failure on, each request waited for the one before it.
    expect(openAtArrival.slice(0, 8)).toEqual([0, 1, 2, 3, 4, 5, 6, 7])
    expect(openAtArrival.slice(10)).toEqual(Array(10).fill(0))
    const rows = await outbox()
    expect(rows.map((r) => [r.state, r.attempts])).toEqual(rows.map(() => ['pending', 1]))
  })

  it('gives back at its stop the notifications it claimed ahead of its slots', async () => {
    status = 204
    holdMs = 300
    await enqueue(10, 'stopping')
    const d = dispatcher(2)
    await d.start()
    await listener.waitFor(2, 10_000)
    const held = (await outbox()).filter((r) => r.lease_owner === d.owner)
    // Two in flight and one claimed ahead (half the concurrency).
    expect(held).toHaveLength(3)
    await d.stop()
    const rows = await outbox()
    expect(rows.filter((r) => r.lease_owner !== null)).toEqual([])
    expect(rows.filter((r) => r.state === 'delivered')).toHaveLength(2)
    expect(rows.filter((r) => r.state === 'pending' && r.attempts === 0)).toHaveLength(8)
    expect(listener.received).toHaveLength(2)
  })
})
