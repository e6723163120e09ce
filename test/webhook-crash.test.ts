import { describe, expect, it, vi } from 'vitest'
import { req, type Target } from './helpers/files.js'
import { type DialectName, dialects } from './helpers/server.js'
import type { ProcessSite, ServerProcess } from './helpers/server-process.js'
import { webhookCrashServers } from './helpers/webhook-crash.js'
import type { AsyncResponder, Delivery, WebhookRecorder } from './helpers/webhook-recorder.js'

/**
 * Webhook delivery across crashes, with Wharf as `npm start` runs it: notifications in flight or
 * still queued when the server is SIGKILLed arrive after a restart on the same data, under the
 * webhook-id they were first sent with; and two processes sharing one PostgreSQL schema send each
 * notification exactly once between them.
 */
const PG_URL = process.env['TEST_DATABASE_URL']
const IN_FLIGHT = 8

const crash = webhookCrashServers()

/**
 * A site of its own for one test, its servers set up for quick webhook deliveries and retries
 * (the crash harness's), with this file's deliveries in flight. A lease of 2 × (0.5 + 1) + 5 = 8 s:
 * what PostgreSQL waits for a killed process's claims.
 */
const newSite = (dialect: DialectName): Promise<ProcessSite> =>
  crash.site(dialect, { WEBHOOK_CONCURRENCY: String(IN_FLIGHT) })

const recorder = (answer: AsyncResponder): Promise<WebhookRecorder> => crash.recorder(answer)

async function configure(t: Target, url: string): Promise<void> {
  const body = { url, triggers: ['Create Folder'], enabled: true }
  const r = await req(t, 'PATCH', '/webhook_settings', body)
  expect(r.status, r.text).toBe(200)
}

async function mkdir(t: Target, p: string): Promise<void> {
  const r = await req(t, 'POST', `/folders/${p}`)
  expect(r.status, r.text).toBe(201)
}

/** Runs `work` on every item, at most `limit` at a time. */
async function pooled<T>(items: T[], limit: number, work: (item: T, i: number) => Promise<void>) {
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      await work(items[i]!, i)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}

/**
 * Polling options for a wait inside a step of `ms`: bounded just past the step, so a wait that
 * runs late fails as the step (with what the servers said), and then stops polling.
 */
const pollWithin = (ms = 20_000) => ({ timeout: ms + 1_000, interval: 50 })

const outbox = (site: ProcessSite) =>
  site.db.db
    .selectFrom('webhook_notifications')
    .select(['message_id', 'path', 'state', 'attempts', 'lease_owner'])
    .orderBy('id')
    .execute()

type OutboxRow = Awaited<ReturnType<typeof outbox>>[number]
const allDelivered = (rows: OutboxRow[], n: number) =>
  rows.length === n && rows.every((r) => r.state === 'delivered')

async function stop(p: ServerProcess, signal: NodeJS.Signals): Promise<void> {
  p.child.kill(signal)
  await crash.servers.step(`the server exiting on ${signal}`, p.exited)
}

/**
 * Every path arrived, always under one webhook-id (the one its outbox row holds, shared with no
 * other path), and every row ends `delivered` with exactly one successful attempt in the log: a
 * second send after the restart would log a second one.
 */
async function expectRedelivered(
  site: ProcessSite,
  rows: OutboxRow[],
  received: Delivery[],
  paths: string[],
) {
  expect(rows.map((r) => r.path).sort()).toEqual([...paths].sort())
  expect(rows.filter((r) => r.state !== 'delivered')).toEqual([])
  expect(new Set(rows.map((r) => r.message_id)).size).toBe(paths.length)
  const idOf = new Map(rows.map((r) => [r.path, r.message_id]))
  for (const d of received) expect(d.id, d.path).toBe(idOf.get(d.path))
  expect([...new Set(received.map((d) => d.path))].sort()).toEqual([...paths].sort())
  const successes = await site.db.db
    .selectFrom('webhook_attempts')
    .select('path')
    .where('success', '=', 1)
    .execute()
  expect(successes.map((a) => a.path).sort()).toEqual([...paths].sort())
}

// Side by side: on PostgreSQL most of each test is waiting out the killed process's leases.
describe.each(dialects)('webhooks across a killed server process (%s)', (dialect) => {
  it.concurrent('sends again, under the same webhook-id, what was in flight or queued when the server was killed', async () => {
    const { step } = crash.servers
    const site = await newSite(dialect)
    const hook = await recorder(() => 'hang')
    const first = await crash.servers.serve(site.env())
    const t = { api: first.api, key: site.key }
    await configure(t, hook.url)
    const paths = Array.from({ length: 40 }, (_, i) => `crash-${i}`)
    await step(
      'creating 40 folders',
      pooled(paths, 10, (p) => mkdir(t, p)),
    )
    await step('deliveries reaching the hanging listener', hook.waitFor(IN_FLIGHT, 10_000))
    // Killed while some are claimed and out, and others still wait in the outbox.
    await step(
      'some notifications out and some queued',
      vi.waitFor(async () => {
        const rows = await outbox(site)
        expect(
          rows.some((r) => r.lease_owner !== null) &&
            rows.some((r) => r.lease_owner === null && r.state === 'pending'),
        ).toBe(true)
      }, pollWithin()),
    )
    await stop(first, 'SIGKILL')

    hook.answer(() => 204)
    const second = await crash.servers.serve(site.env())
    // PostgreSQL: the killed process's claims hold until their lease (8 s) ends.
    const rows = await step(
      'every notification delivered after the restart',
      vi.waitFor(async () => {
        const r = await outbox(site)
        expect(allDelivered(r, paths.length)).toBe(true)
        return r
      }, pollWithin(30_000)),
      30_000,
    )
    await expectRedelivered(site, rows, hook.deliveries, paths)
    // The requests that hung were sent again (so the same-id check above had repeats to compare).
    const sent = new Map<string, number>()
    for (const d of hook.deliveries) sent.set(d.path, (sent.get(d.path) ?? 0) + 1)
    expect([...sent.values()].filter((n) => n > 1).length).toBeGreaterThanOrEqual(IN_FLIGHT)
    await stop(second, 'SIGTERM')
  }, 60_000)

  it.concurrent('delivers notifications that were only enqueued, never claimed, when the server was killed', async () => {
    const { step } = crash.servers
    const site = await newSite(dialect)
    const hook = await recorder(() => 'hang')
    // One delivery at a time: while the first hangs, the next ones can only wait in the outbox.
    // It hangs up to 2 s, time enough to queue and check them (its lease on PostgreSQL: 10 s).
    const first = await crash.servers.serve(
      site.env({ WEBHOOK_CONCURRENCY: '1', WEBHOOK_TIMEOUT_MS: '2000' }),
    )
    const t = { api: first.api, key: site.key }
    await configure(t, hook.url)
    await mkdir(t, 'queued-first')
    await step('the first delivery reaching the hanging listener', hook.waitFor(1, 10_000))
    const queued = Array.from({ length: 10 }, (_, i) => `queued-${i}`)
    await step(
      'creating 10 folders',
      pooled(queued, 10, (p) => mkdir(t, p)),
    )
    // Checked before the kill, within the first request's timeout (which would free the slot).
    // Besides its one slot the process holds at most one claim ahead (half its concurrency).
    const pending = (await outbox(site)).filter((r) => queued.includes(r.path))
    expect(pending.map((r) => [r.state, r.attempts])).toEqual(queued.map(() => ['pending', 0]))
    expect(pending.filter((r) => r.lease_owner !== null).length).toBeLessThanOrEqual(1)
    await stop(first, 'SIGKILL')
    expect(hook.deliveries.map((d) => d.path)).toEqual(['queued-first'])

    hook.answer(() => 204)
    const second = await crash.servers.serve(site.env())
    const rows = await step(
      'every notification delivered after the restart',
      vi.waitFor(async () => {
        const r = await outbox(site)
        expect(allDelivered(r, queued.length + 1)).toBe(true)
        return r
      }, pollWithin(30_000)),
      30_000,
    )
    await expectRedelivered(site, rows, hook.deliveries, ['queued-first', ...queued])
    expect(hook.deliveries.filter((d) => d.path === 'queued-first')).toHaveLength(2)
    await stop(second, 'SIGTERM')
  }, 60_000)
})

describe.skipIf(!PG_URL)('two server processes on one PostgreSQL schema (needs TEST_DATABASE_URL)', () => {
  it('sends each of 1,000 notifications exactly once, some from each process', async () => {
    const { step } = crash.servers
    const site = await newSite('postgres')
    // Answered once the outbox row has been read: the row is still claimed by the sender then.
    const owners = new Map<string, string | null>()
    const hook = await recorder(async (d) => {
      const row = await site.db.db
        .selectFrom('webhook_notifications')
        .select('lease_owner')
        .where('message_id', '=', d.id)
        .executeTakeFirst()
      owners.set(d.id, row?.lease_owner ?? null)
      return 204
    })
    const env = site.env({ WEBHOOK_CONCURRENCY: '16' })
    const [a, b] = await Promise.all([crash.servers.serve(env), crash.servers.serve(env)])
    const via = [a, b].map((p) => ({ api: p.api, key: site.key }))
    await configure(via[0]!, hook.url)

    const paths = Array.from({ length: 1000 }, (_, i) => `pair-${i}`)
    await step(
      'creating 1,000 folders through both',
      pooled(paths, 20, (p, i) => mkdir(via[i % 2]!, p)),
      60_000,
    )
    await step('1,000 requests reaching the listener', hook.waitFor(1000, 30_000), 31_000)
    const rows = await step(
      'every notification delivered',
      vi.waitFor(async () => {
        const r = await outbox(site)
        expect(allDelivered(r, 1000)).toBe(true)
        return r
      }, pollWithin()),
    )
    const logged = await site.db.db.selectFrom('webhook_attempts').select(['attempt', 'success']).execute()

    const ids = hook.deliveries.map((d) => d.id)
    expect(ids).toHaveLength(1000)
    expect(new Set(ids).size).toBe(1000)
    expect(hook.deliveries.map((d) => d.path).sort()).toEqual([...paths].sort())
    expect(new Set(rows.map((r) => r.message_id))).toEqual(new Set(ids))
    expect(logged).toHaveLength(1000)
    expect(logged.filter((l) => l.attempt !== 1 || l.success !== 1)).toEqual([])
    // lease_owner is `<host>:<pid>:<random>`: the process that claimed and sent the notification.
    const senders = [...owners.values()].map((o) => Number(o?.split(':')[1]))
    const counts = [a.pid, b.pid].map((pid) => senders.filter((s) => s === pid).length)
    expect(
      counts.every((c) => c > 0),
      `deliveries per process: ${counts}`,
    ).toBe(true)
    expect(counts[0]! + counts[1]!).toBe(1000)
    await Promise.all([stop(a, 'SIGTERM'), stop(b, 'SIGTERM')])
  }, 120_000)
})
