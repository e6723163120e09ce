import { afterAll, describe, expect, it, vi } from 'vitest'
import { uploaded } from './helpers/files.js'
import { type Received, startListener, type TestListener } from './helpers/listener.js'
import { call, dialects, useServer } from './helpers/server.js'

const WAIT = { timeout: 20_000, interval: 20 }

/**
 * What an endpoint kept while paused or disabled goes out, once enabled, in each path's order
 * with any concurrency: different paths in parallel, one path's events one after another; so
 * does a recovery, even of events that had failed past the order hold.
 */
describe.each(dialects)('held webhook notifications in order (%s)', (dialect) => {
  const s = useServer(dialect, {
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
    // Long enough (8 s) for every event to fail past the hold before any runs out of attempts.
    WEBHOOK_RETRY_SCHEDULE: Array(40).fill('0.2').join(','),
    WEBHOOK_ORDER_HOLD_ATTEMPTS: '2',
  })
  const listeners: TestListener[] = []
  afterAll(async () => {
    for (const l of listeners) await l.close()
  })

  /**
   * A listener answering `answer()` after a short wait, counting the requests in flight, and
   * noting a request that came while another of the same path was still unanswered: a path's
   * newer event sent before its older one was delivered (or failed).
   */
  async function slowListener(answer: () => number) {
    const flight = { now: 0, most: 0, overlaps: [] as string[] }
    const open = new Map<string, number>()
    const l = await startListener(async (r) => {
      const path = r.json.path as string
      const seq = Number(r.headers['webhook-sequence'])
      if (open.has(path)) flight.overlaps.push(`${path} ${seq} while ${open.get(path)}`)
      open.set(path, seq)
      flight.now++
      flight.most = Math.max(flight.most, flight.now)
      // Long enough for the requests of other paths to arrive meanwhile.
      await new Promise((r) => setTimeout(r, 40))
      flight.now--
      open.delete(path)
      return answer()
    })
    listeners.push(l)
    return { l, flight }
  }

  async function endpointFor(folder: string, url: string) {
    const b = await call(s, 'POST', '/behaviors', {
      key: s.adminKey,
      body: { path: folder, behavior: 'webhook', value: { urls: [url], triggers: ['Upload'] } },
    })
    expect(b.status, b.text).toBe(201)
    const list = await call(s, 'GET', '/webhook_endpoints', { key: s.adminKey })
    const id = (list.body as any[]).find((e) => e.url === url).id as number
    const p = await call(s, 'PATCH', `/webhook_endpoints/${id}`, {
      key: s.adminKey,
      body: { concurrency: 4 },
    })
    expect(p.status, p.text).toBe(200)
    return id
  }
  const patch = async (id: number, body: Record<string, unknown>) => {
    const r = await call(s, 'PATCH', `/webhook_endpoints/${id}`, { key: s.adminKey, body })
    expect(r.status, r.text).toBe(200)
  }
  const states = async (folder: string) =>
    (
      await s.container.db
        .selectFrom('webhook_notifications')
        .select('state')
        .where('path', 'like', `${folder}/%`)
        .where('behavior_id', 'is not', null)
        .execute()
    ).map((r) => r.state)

  /**
   * Each path's events arrive in their order: a sequence number is first seen only once every
   * lower one of its path was (a repeat of one already seen may come again, never before).
   */
  function expectPathOrder(received: Received[], paths: string[], rounds: number) {
    for (const p of paths) {
      const seqs = received.filter((r) => r.json.path === p).map((r) => Number(r.headers['webhook-sequence']))
      const firsts = seqs.filter((q, i) => seqs.indexOf(q) === i)
      expect(firsts, p).toEqual(Array.from({ length: rounds }, (_, i) => i + 1))
    }
  }

  async function interleaved(folder: string, paths: string[], rounds: number) {
    for (let round = 0; round < rounds; round++) {
      for (const p of paths) await uploaded(s, `${folder}/${p}`, `${p} ${round}`)
    }
  }

  it('sends what a paused endpoint kept in each path’s order, paths in parallel, with concurrency 4', async () => {
    const { l, flight } = await slowListener(() => 200)
    const id = await endpointFor('paused', l.url)
    await patch(id, { state: 'paused' })
    const paths = ['a.txt', 'b.txt', 'c.txt']
    const rounds = 5
    await interleaved('paused', paths, rounds)
    await vi.waitFor(async () => expect(await states('paused')).toEqual(Array(15).fill('held')), WAIT)
    expect(l.received).toHaveLength(0)
    await patch(id, { state: 'enabled' })
    await l.waitFor(paths.length * rounds, 20_000)
    expectPathOrder(
      l.received,
      paths.map((p) => `paused/${p}`),
      rounds,
    )
    expect(flight.overlaps).toEqual([])
    expect(flight.most).toBeGreaterThan(1)
    expect(flight.most).toBeLessThanOrEqual(4)
  })

  it('keeps each path’s order for what was kept after failing past the order hold', async () => {
    let failing = true
    const { l, flight } = await slowListener(() => (failing ? 500 : 200))
    const id = await endpointFor('failed', l.url)
    const paths = ['a.txt', 'b.txt', 'c.txt']
    const rounds = 4
    await interleaved('failed', paths, rounds)
    // Every event has failed past the hold (2 attempts): they no longer wait for one another.
    await vi.waitFor(async () => {
      const n = await s.container.db
        .selectFrom('webhook_notifications')
        .select('attempts')
        .where('path', 'like', 'failed/%')
        .where('behavior_id', 'is not', null)
        .execute()
      expect(n.filter((r) => Number(r.attempts) >= 2)).toHaveLength(paths.length * rounds)
    }, WAIT)
    await patch(id, { state: 'paused' })
    await vi.waitFor(async () => expect(await states('failed')).toEqual(Array(12).fill('held')), WAIT)
    // Past the hold, a path's events overlapped while failing; from the enable on, none may.
    await vi.waitFor(() => expect(flight.now).toBe(0), WAIT)
    flight.overlaps.length = 0
    const before = l.received.length
    failing = false
    await patch(id, { state: 'enabled' })
    await l.waitFor(before + paths.length * rounds, 20_000)
    expectPathOrder(
      l.received.slice(before),
      paths.map((p) => `failed/${p}`),
      rounds,
    )
    expect(flight.overlaps).toEqual([])
    expect(flight.most).toBeGreaterThan(1)
  })

  it('sends a recovery of events that had failed past the order hold in each path’s order', async () => {
    let failing = true
    const { l, flight } = await slowListener(() => (failing ? 500 : 200))
    const id = await endpointFor('recovered', l.url)
    const paths = ['a.txt', 'b.txt', 'c.txt']
    const rounds = 4
    await interleaved('recovered', paths, rounds)
    const attempts = async () =>
      (
        await s.container.db
          .selectFrom('webhook_notifications')
          .select('attempts')
          .where('path', 'like', 'recovered/%')
          .where('behavior_id', 'is not', null)
          .execute()
      ).map((r) => Number(r.attempts))
    await vi.waitFor(async () => expect((await attempts()).filter((a) => a >= 2)).toHaveLength(12), WAIT)
    failing = false
    await vi.waitFor(async () => expect(await states('recovered')).toEqual(Array(12).fill('delivered')), WAIT)
    await vi.waitFor(() => expect(flight.now).toBe(0), WAIT)
    flight.overlaps.length = 0
    const before = l.received.length
    const r = await call(s, 'POST', `/webhook_endpoints/${id}/recover`, { key: s.adminKey, body: {} })
    expect(r.status, r.text).toBe(200)
    expect(r.body.count).toBe(12)
    await l.waitFor(before + 12, 20_000)
    expectPathOrder(
      l.received.slice(before),
      paths.map((p) => `recovered/${p}`),
      rounds,
    )
    expect(flight.overlaps).toEqual([])
    expect(flight.most).toBeGreaterThan(1)
  })
})
