import { describe, expect, it, vi } from 'vitest'
import { req, type Target } from './helpers/files.js'
import { dialects } from './helpers/server.js'
import { pollWithin, webhookCrashServers } from './helpers/webhook-crash.js'
import type { Delivery } from './helpers/webhook-recorder.js'

/**
 * A recovery across a SIGKILL, with Wharf as `npm start` runs it: 300 past events over 3 paths
 * are queued again by `POST /webhook_endpoints/{id}/recover`, the server is killed while they are
 * being delivered to a real listener, and restarted on the same data. Nothing is lost, and each
 * path's events arrive in their order.
 */
const crash = webhookCrashServers()

const PATHS = ['rec-a', 'rec-b', 'rec-c']
const ROUNDS = 100

/**
 * The order a listener may see one path's events in, by `Webhook-Sequence`: each delivery is
 * either the next number (one more than the newest seen so far, starting at 1) or a repeat of
 * the newest seen so far (at least once: the one in flight when the server died is sent again).
 * So no number is skipped, no older event ever comes after a newer one, and a repeat is only of
 * the event being delivered at the time. Returns the newest number seen.
 */
function expectInOrder(path: string, got: Delivery[]): number {
  let newest = 0
  for (const [i, d] of got.entries()) {
    const ok = d.sequence === newest || d.sequence === newest + 1
    expect(ok, `${path}: delivery ${i} is number ${d.sequence} after ${newest}`).toBe(true)
    newest = d.sequence!
  }
  return newest
}

describe.each(dialects)('a webhook recovery across a killed server process (%s)', (dialect) => {
  it('delivers every recovered event at least once, each path in order, after a SIGKILL mid-recovery', async () => {
    const { servers } = crash
    const { step } = servers
    // Room for many deliveries at once (recovered events are retries: half the pool), so that
    // only the per-path order keeps a path's events from going out together.
    const site = await crash.site(dialect, { WEBHOOK_CONCURRENCY: '16' })
    // Slow enough answers that the recovery is still under way when the server is killed, and
    // that a path's newer event sent before its older one was answered is seen doing so.
    const open = new Map<string, number | undefined>()
    const overlaps: string[] = []
    const rec = await crash.recorder(async (d) => {
      if (open.has(d.path)) overlaps.push(`${d.path} ${d.sequence} while ${open.get(d.path)} was unanswered`)
      open.set(d.path, d.sequence)
      await new Promise((r) => setTimeout(r, 15))
      open.delete(d.path)
      return 204
    })
    const first = await servers.serve(site.env())
    const t: Target = { api: first.api, key: site.key }
    const set = await req(t, 'PATCH', '/webhook_settings', {
      url: rec.url,
      triggers: ['Create Folder', 'Delete'],
      enabled: true,
    })
    expect(set.status, set.text).toBe(200)
    for (let round = 0; round < ROUNDS; round++) {
      for (const p of PATHS) {
        const r =
          round % 2 === 0
            ? await req(t, 'POST', `/folders/${p}`)
            : await req(t, 'DELETE', `/files/${p}?recursive=true`)
        expect(r.status, r.text).toBe(round % 2 === 0 ? 201 : 204)
      }
    }
    const total = PATHS.length * ROUNDS
    const outbox = () =>
      site.db.db
        .selectFrom('webhook_notifications')
        .select(['message_id', 'path', 'sequence', 'state'])
        .orderBy('id')
        .execute()
    const rows = await step(
      'the events delivered once',
      vi.waitFor(async () => {
        const r = await outbox()
        expect(r.length === total && r.every((x) => x.state === 'delivered')).toBe(true)
        return r
      }, pollWithin(60_000)),
      60_000,
    )
    const idOf = new Map(rows.map((r) => [`${r.path} ${r.sequence}`, r.message_id]))

    const list = await req(t, 'GET', '/webhook_endpoints')
    expect(list.status, list.text).toBe(200)
    const endpoint = (list.body as any[]).find((e) => e.behavior_id === null)
    const mark = rec.deliveries.length
    overlaps.length = 0
    const recovered = await req(t, 'POST', `/webhook_endpoints/${endpoint.id}/recover`, {})
    expect(recovered.status, recovered.text).toBe(200)
    expect(recovered.body).toEqual({ endpoint_id: endpoint.id, dry_run: false, count: total })
    await step('the recovery under way', rec.waitFor(mark + 30, 20_000))
    first.child.kill('SIGKILL')
    await step('the server exiting on SIGKILL', first.exited)
    // Killed in the middle: part of the recovery arrived, not all of it.
    const beforeKill = rec.deliveries.length - mark
    expect(beforeKill).toBeGreaterThanOrEqual(30)
    expect(beforeKill).toBeLessThan(total)

    const second = await servers.serve(site.env())
    await step(
      'every recovered event delivered after the restart',
      vi.waitFor(async () => {
        const r = await outbox()
        expect(r.every((x) => x.state === 'delivered')).toBe(true)
        const seen = new Set(rec.deliveries.slice(mark).map((d) => d.id))
        expect(seen.size).toBe(total)
      }, pollWithin(60_000)),
      60_000,
    )
    const again = rec.deliveries.slice(mark)
    // Nothing lost: every event id arrived at least once, under the id it always had.
    expect(new Set(again.map((d) => d.id))).toEqual(new Set(rows.map((r) => r.message_id)))
    for (const d of again) expect(d.id).toBe(idOf.get(`${d.path} ${d.sequence}`))
    for (const p of PATHS) {
      expect(
        expectInOrder(
          p,
          again.filter((d) => d.path === p),
        ),
      ).toBe(ROUNDS)
    }
    // Each one sent only once the one before it was answered (the server's own order, not luck).
    expect(overlaps).toEqual([])
    second.child.kill('SIGTERM')
    await step('the server exiting on SIGTERM', second.exited)
  }, 240_000)
})
