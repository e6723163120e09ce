import { describe, expect, it, vi } from 'vitest'
import { req, type Target } from './helpers/files.js'
import { dialects } from './helpers/server.js'
import { pollWithin, webhookCrashServers } from './helpers/webhook-crash.js'

/**
 * Webhook behaviors' notifications across a SIGKILL, with Wharf as `npm start` runs it: those in
 * flight or still queued arrive after a restart on the same data, each under the webhook-id it
 * was first sent with, each URL its own.
 */
const crash = webhookCrashServers()

describe.each(dialects)('webhook behaviors across a killed server process (%s)', (dialect) => {
  it('sends again, under the same webhook-id, each URL’s notifications in flight or queued at the kill', async () => {
    const { servers } = crash
    const { step } = servers
    const site = await crash.site(dialect)
    const one = await crash.recorder(() => 'hang')
    const two = await crash.recorder(() => 'hang')
    const first = await servers.serve(site.env())
    const t: Target = { api: first.api, key: site.key }
    const made = await req(t, 'POST', '/behaviors', {
      path: '/',
      behavior: 'webhook',
      value: { urls: [one.url, two.url], triggers: ['Create Folder'] },
    })
    expect(made.status, made.text).toBe(201)
    const paths = Array.from({ length: 12 }, (_, i) => `crash-${i}`)
    for (const p of paths) expect((await req(t, 'POST', `/folders/${p}`)).status).toBe(201)
    await step('deliveries reaching the hanging listeners', one.waitFor(1, 10_000))
    const outbox = () =>
      site.db.db
        .selectFrom('webhook_notifications')
        .select(['message_id', 'path', 'url', 'state', 'lease_owner', 'behavior_id'])
        .orderBy('id')
        .execute()
    await step(
      'some notifications out and some queued',
      vi.waitFor(async () => {
        const rows = await outbox()
        expect(
          rows.some((r) => r.lease_owner !== null) &&
            rows.some((r) => r.lease_owner === null && r.state === 'pending'),
        ).toBe(true)
      }, pollWithin()),
    )
    first.child.kill('SIGKILL')
    await step('the server exiting on SIGKILL', first.exited)

    one.answer(() => 204)
    two.answer(() => 204)
    const second = await servers.serve(site.env())
    const rows = await step(
      'every notification delivered after the restart',
      vi.waitFor(async () => {
        const r = await outbox()
        expect(r.length === paths.length * 2 && r.every((x) => x.state === 'delivered')).toBe(true)
        return r
      }, pollWithin(30_000)),
      30_000,
    )
    expect(new Set(rows.map((r) => Number(r.behavior_id)))).toEqual(new Set([made.body.id]))
    for (const [rec, url] of [
      [one, one.url],
      [two, two.url],
    ] as const) {
      const mine = rows.filter((r) => r.url === url)
      expect(mine.map((r) => r.path).sort()).toEqual([...paths].sort())
      const idOf = new Map(mine.map((r) => [r.path, r.message_id]))
      for (const d of rec.deliveries) expect(d.id, d.path).toBe(idOf.get(d.path))
      expect([...new Set(rec.deliveries.map((d) => d.path))].sort()).toEqual([...paths].sort())
    }
    const successes = await site.db.db
      .selectFrom('webhook_attempts')
      .select(['path', 'request_url'])
      .where('success', '=', 1)
      .execute()
    expect(successes).toHaveLength(paths.length * 2)
    second.child.kill('SIGTERM')
    await step('the server exiting on SIGTERM', second.exited)
  }, 60_000)
})
