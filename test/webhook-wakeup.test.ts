import type { KyselyPlugin } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openDatabase } from '../src/db/database.js'
import { RetryPolicy } from '../src/webhooks/retry-policy.js'
import { WebhookDispatcher } from '../src/webhooks/webhook-dispatcher.js'
import { enqueueNotification, outboxSignal } from '../src/webhooks/webhook-outbox.js'
import { startListener, type TestListener } from './helpers/listener.js'
import { call, dialects, useServer } from './helpers/server.js'

/**
 * Holds the dispatcher's first look at the next due time (a SELECT of `next_attempt_at`, run after its
 * claims) until `open()`: the result is read, then kept back.
 */
function gateFirstSelect() {
  let reached!: () => void
  let open!: () => void
  const atGate = new Promise<void>((r) => {
    reached = r
  })
  const opened = new Promise<void>((r) => {
    open = r
  })
  // Set when the query is compiled; its result is the next one this dispatcher's database yields
  // (its queries run one after another).
  let gated: 'armed' | 'held' | null = null
  const plugin: KyselyPlugin = {
    transformQuery(args) {
      const node = args.node
      // The only SELECT of the outbox by due time (claims are UPDATEs with a subquery).
      if (
        gated === null &&
        node.kind === 'SelectQueryNode' &&
        JSON.stringify(node).includes('"next_attempt_at"')
      )
        gated = 'armed'
      return args.node
    },
    async transformResult(args) {
      if (gated === 'armed') {
        gated = 'held'
        reached()
        await opened
      }
      return args.result
    },
  }
  return { plugin, atGate, open }
}

describe.each(dialects)('dispatcher wake-ups (%s)', (dialect) => {
  let listener: TestListener
  const s = useServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })
  beforeAll(async () => {
    // This test runs a dispatcher of its own, with no competitor.
    await s.container.webhooks.dispatcher.stop()
    listener = await startListener(() => 204)
    const body = { url: listener.url, triggers: ['Create Folder'], enabled: true }
    expect((await call(s, 'PATCH', '/webhook_settings', { key: s.adminKey, body })).status).toBe(200)
  })
  afterAll(async () => {
    await listener?.close()
  })

  it('sends a notification whose wake-up came while it read the next due time', async () => {
    const gate = gateFirstSelect()
    let woken!: () => void
    const wake = new Promise<void>((r) => {
      woken = r
    })
    const { database } = s.container
    const dispatcher = new WebhookDispatcher(
      s.container.db.withPlugin(gate.plugin),
      s.container.webhooks.sender,
      new RetryPolicy([0.1]),
      Date.now,
      {
        concurrency: 4,
        leaseMs: 60_000,
        // Only a wake-up can deliver within the test.
        pollMs: 3600_000,
        ...(database.listen
          ? {
              listen: (onNotify: () => void) =>
                database.listen!(
                  (schema) => `wharf_webhooks_${schema}`,
                  () => {
                    onNotify()
                    woken()
                  },
                ),
            }
          : {}),
      },
    )
    if (!database.listen) outboxSignal.once('enqueued', () => woken())
    // SQLite: another connection, as the dispatcher's one is held at the gate.
    const other = dialect === 'sqlite' ? openDatabase({ dataDir: s.container.config.dataDir }) : null
    try {
      await dispatcher.start()
      await withLimit(gate.atGate, 'the dispatcher reading the next due time')
      const actor = { siteId: s.container.site.id, userId: null, username: 'admin', interface: 'restapi' }
      const facts = { action: 'create', path: 'late-wakeup', targets: [{ type: 'folder' }] }
      await enqueueNotification(other?.db ?? s.container.db, actor, 0, facts, Date.now())
      await withLimit(wake, 'the wake-up of the enqueued notification')
      gate.open()
      const got = await listener.waitFor(1, 5000)
      expect(got.map((r) => r.json.path)).toEqual(['late-wakeup'])
    } finally {
      gate.open()
      await dispatcher.stop()
      await other?.close()
    }
  })
})

async function withLimit<T>(p: Promise<T>, what: string, ms = 5000): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([p, late])
  } finally {
    clearTimeout(timer)
  }
}
