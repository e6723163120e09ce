import { describe, expect, it, vi } from 'vitest'
import { req, type Target } from './helpers/files.js'
import { dialects } from './helpers/server.js'
import { IN_FLIGHT, pollWithin, webhookCrashServers } from './helpers/webhook-crash.js'

/**
 * Per-path order across a SIGKILL, with Wharf as `npm start` runs it: three folders made and
 * deleted in turn while the listener hangs; the server is killed with deliveries out and others
 * held back; after a restart every path's events arrive in their order, each under its number
 * and the webhook-id it was first sent with.
 */
const crash = webhookCrashServers()

describe.each(dialects)('per-path webhook order across a killed server process (%s)', (dialect) => {
  it('keeps each path’s order when the server is killed in the middle of delivery', async () => {
    const { servers } = crash
    const { step } = servers
    const site = await crash.site(dialect, {
      // Every attempt holds: order must survive the kill, not the bound.
      WEBHOOK_ORDER_HOLD_ATTEMPTS: '21',
    })
    const rec = await crash.recorder(() => 'hang')
    const first = await servers.serve(site.env())
    const t: Target = { api: first.api, key: site.key }
    const set = await req(t, 'PATCH', '/webhook_settings', {
      url: rec.url,
      triggers: ['Create Folder', 'Delete'],
      enabled: true,
    })
    expect(set.status, set.text).toBe(200)
    const paths = ['ord-a', 'ord-b', 'ord-c']
    const rounds = 4
    for (let round = 0; round < rounds; round++) {
      for (const p of paths) {
        const r =
          round % 2 === 0
            ? await req(t, 'POST', `/folders/${p}`)
            : await req(t, 'DELETE', `/files/${p}?recursive=true`)
        expect(r.status, r.text).toBe(round % 2 === 0 ? 201 : 204)
      }
    }
    const outbox = () =>
      site.db.db
        .selectFrom('webhook_notifications')
        .select(['message_id', 'path', 'sequence', 'state', 'lease_owner'])
        .orderBy('id')
        .execute()
    await step('deliveries reaching the hanging listener', rec.waitFor(IN_FLIGHT, 10_000))
    await step(
      'some notifications out and the rest held back',
      vi.waitFor(async () => {
        const rows = await outbox()
        expect(rows.some((r) => r.lease_owner !== null)).toBe(true)
        expect(rows.filter((r) => r.state === 'pending')).toHaveLength(paths.length * rounds)
      }, pollWithin()),
    )
    first.child.kill('SIGKILL')
    await step('the server exiting on SIGKILL', first.exited)
    // Before the kill only each path's first event went out.
    expect(rec.deliveries.length).toBeGreaterThan(0)
    expect(rec.deliveries.every((d) => d.sequence === 1)).toBe(true)

    rec.answer(() => 204)
    const second = await servers.serve(site.env())
    const rows = await step(
      'every notification delivered after the restart',
      vi.waitFor(async () => {
        const r = await outbox()
        expect(r.length === paths.length * rounds && r.every((x) => x.state === 'delivered')).toBe(true)
        return r
      }, pollWithin(30_000)),
      30_000,
    )
    for (const p of paths) {
      const mine = rows.filter((r) => r.path === p)
      expect(mine.map((r) => Number(r.sequence))).toEqual([1, 2, 3, 4])
      const idOf = new Map(mine.map((r) => [Number(r.sequence), r.message_id]))
      const got = rec.deliveries.filter((d) => d.path === p)
      // In order: a number is first sent once every lower one was; each under its own id.
      for (const [i, d] of got.entries()) {
        expect(d.id).toBe(idOf.get(d.sequence!))
        if (i > 0) expect(d.sequence!).toBeGreaterThanOrEqual(got[i - 1]!.sequence!)
      }
      expect([...new Set(got.map((d) => d.sequence))]).toEqual([1, 2, 3, 4])
    }
    second.child.kill('SIGTERM')
    await step('the server exiting on SIGTERM', second.exited)
  }, 90_000)
})
