import { describe, expect, it, vi } from 'vitest'
import { uploaded } from './helpers/files.js'
import { type Answer, type Received, startListener, type TestListener } from './helpers/listener.js'
import { call, dialects, type TestServer, useServersPerTest } from './helpers/server.js'

/** How long and how often to poll for what the dispatcher does after a request returns. */
const WAIT = { timeout: 20_000, interval: 20 }

/** One request as a listener saw it, and how it was answered. */
interface Seen {
  path: string
  sequence: number
  id: string
  attempt: number
  ok: boolean
}

/**
 * A listener that answers with `decide` and records every request with its `Webhook-Sequence`,
 * `webhook-id` and whether it was answered 200.
 */
async function recorder(decide: (path: string, sequence: number, tries: number) => boolean) {
  const seen: Seen[] = []
  const tries = new Map<string, number>()
  const listener = await startListener((r: Received): Answer => {
    const path = r.json?.path as string
    const sequence = Number(r.headers['webhook-sequence'])
    const key = `${path}#${sequence}`
    const n = tries.get(key) ?? 0
    tries.set(key, n + 1)
    const ok = decide(path, sequence, n)
    seen.push({ path, sequence, id: String(r.headers['webhook-id']), attempt: r.json?.attempt, ok })
    return ok ? 200 : 500
  })
  return { listener, seen }
}

/**
 * Per path, deliveries arrived in order: a sequence number is first sent only once every lower
 * one of its path was answered 200, no number is answered 200 twice, each keeps its webhook-id
 * and counts its attempts, and the numbers run from 1 to `count`.
 */
function expectOrdered(seen: Seen[], path: string, count: number) {
  const mine = seen.filter((s) => s.path === path)
  const delivered = new Set<number>()
  const ids = new Map<number, string>()
  const attempts = new Map<number, number>()
  for (const s of mine) {
    for (let k = 1; k < s.sequence; k++)
      expect(delivered.has(k), `${path} #${s.sequence} before #${k}`).toBe(true)
    expect(delivered.has(s.sequence), `${path} #${s.sequence} delivered twice`).toBe(false)
    if (s.ok) delivered.add(s.sequence)
    const id = ids.get(s.sequence) ?? s.id
    expect(s.id).toBe(id)
    ids.set(s.sequence, id)
    const attempt = (attempts.get(s.sequence) ?? 0) + 1
    expect(s.attempt).toBe(attempt)
    attempts.set(s.sequence, attempt)
  }
  expect([...delivered].sort()).toEqual(Array.from({ length: count }, (_, i) => i + 1))
  expect(new Set(ids.values()).size).toBe(count)
}

const deliveredCount = (seen: Seen[], path: string) => seen.filter((s) => s.path === path && s.ok).length

async function listenAt(s: TestServer, url: string) {
  const r = await call(s, 'PATCH', '/webhook_settings', {
    key: s.adminKey,
    body: { url, triggers: ['Upload'], enabled: true },
  })
  expect(r.status, r.text).toBe(200)
}

describe.each(dialects)('per-path webhook ordering (%s)', (dialect) => {
  const serve = useServersPerTest(dialect)
  const listeners: TestListener[] = []
  const server = async (env: Record<string, string>) => {
    const s = await serve(
      { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_TIMEOUT_MS: '5000', ...env },
      { resolver: async () => [{ address: '127.0.0.2', family: 4 }] },
    )
    return s
  }
  const close = async () => {
    for (const l of listeners.splice(0)) await l.close()
  }

  it('sends each path in order while an older delivery is retried, other paths and endpoints meanwhile', async () => {
    // Retries far apart from the bound: only a release by the test lets a's first one through.
    const s = await server({
      WEBHOOK_RETRY_SCHEDULE: Array(40).fill('0.25').join(','),
      WEBHOOK_ORDER_HOLD_ATTEMPTS: '41',
    })
    let released = false
    const site = await recorder((path, seq, tries) => {
      if (path === 'ord/a.txt' && seq === 1) return released
      if (path === 'ord/b.txt' && seq === 2) return tries >= 2
      return true
    })
    // A behavior's URL is an endpoint of its own: its numbers and its order are its own.
    const folder = await recorder((path, seq, tries) => !(path === 'ord/c.txt' && seq === 1 && tries < 1))
    listeners.push(site.listener, folder.listener)
    try {
      await listenAt(s, site.listener.url)
      const r = await call(s, 'POST', '/behaviors', {
        key: s.adminKey,
        body: {
          path: 'ord',
          behavior: 'webhook',
          value: { urls: [folder.listener.url], triggers: ['Upload'] },
        },
      })
      expect(r.status, r.text).toBe(201)
      for (let round = 1; round <= 3; round++)
        for (const name of ['a', 'b', 'c']) await uploaded(s, `ord/${name}.txt`, `${name}${round}`)

      // b and c are all delivered to the site while a's first upload keeps failing, and the folder's
      // URL gets everything, a's too.
      await vi.waitFor(() => {
        expect(deliveredCount(site.seen, 'ord/b.txt')).toBe(3)
        expect(deliveredCount(site.seen, 'ord/c.txt')).toBe(3)
        expect(site.seen.filter((x) => x.path === 'ord/a.txt').length).toBeGreaterThanOrEqual(2)
        for (const p of ['a', 'b', 'c']) expect(deliveredCount(folder.seen, `ord/${p}.txt`)).toBe(3)
      }, WAIT)
      const heldBack = site.seen.filter((x) => x.path === 'ord/a.txt')
      expect(heldBack.every((x) => x.sequence === 1 && !x.ok)).toBe(true)

      released = true
      await vi.waitFor(() => expect(deliveredCount(site.seen, 'ord/a.txt')).toBe(3), WAIT)
      for (const p of ['a', 'b', 'c']) {
        expectOrdered(site.seen, `ord/${p}.txt`, 3)
        expectOrdered(folder.seen, `ord/${p}.txt`, 3)
      }
      // The log records the header with the request (written once the listener has answered:
      // the last record may land a moment after the listener saw its request).
      await vi.waitFor(async () => {
        const logged = await s.container.db
          .selectFrom('webhook_attempts')
          .select(['request_headers', 'behavior_id'])
          .where('path', '=', 'ord/a.txt')
          .where('success', '=', 1)
          .orderBy('id')
          .execute()
        expect(
          logged
            .filter((l) => l.behavior_id === null)
            .map((l) => JSON.parse(l.request_headers)['Webhook-Sequence']),
        ).toEqual(['1', '2', '3'])
      }, WAIT)
    } finally {
      await close()
    }
  })

  it('stops holding a newer delivery back once the older one had WEBHOOK_ORDER_HOLD_ATTEMPTS attempts', async () => {
    const s = await server({ WEBHOOK_RETRY_SCHEDULE: '0.1,0.1,0.1', WEBHOOK_ORDER_HOLD_ATTEMPTS: '2' })
    const site = await recorder((path, seq) => !(path === 'hold/a.txt' && seq === 1))
    listeners.push(site.listener)
    try {
      await listenAt(s, site.listener.url)
      await uploaded(s, 'hold/a.txt', 'one')
      await uploaded(s, 'hold/a.txt', 'two')
      await vi.waitFor(() => {
        expect(deliveredCount(site.seen, 'hold/a.txt')).toBe(1)
        expect(site.seen.filter((x) => x.sequence === 1)).toHaveLength(4)
      }, WAIT)
      const order = site.seen.map((x) => `${x.sequence}:${x.attempt}`)
      // The second goes out only after the first's second attempt failed, and the first's later
      // attempts still go out (after it: the bound is where order gives way).
      expect(order.indexOf('2:1')).toBeGreaterThan(order.indexOf('1:2'))
      expect(order.slice(0, 2)).toEqual(['1:1', '1:2'])
      // The last attempt's record commits after the listener answered it.
      await vi.waitFor(async () => {
        const states = await s.container.db
          .selectFrom('webhook_notifications')
          .select(['sequence', 'state', 'attempts'])
          .where('path', '=', 'hold/a.txt')
          .orderBy('sequence')
          .execute()
        expect(states).toEqual([
          { sequence: 1, state: 'failed', attempts: 4 },
          { sequence: 2, state: 'delivered', attempts: 1 },
        ])
      }, WAIT)
    } finally {
      await close()
    }
  })

  it('sends every path unordered with WEBHOOK_ORDER_HOLD_ATTEMPTS=0, numbered all the same', async () => {
    const s = await server({
      WEBHOOK_RETRY_SCHEDULE: Array(20).fill('0.25').join(','),
      WEBHOOK_ORDER_HOLD_ATTEMPTS: '0',
    })
    const site = await recorder((path, seq) => !(path === 'free/a.txt' && seq === 1))
    listeners.push(site.listener)
    try {
      await listenAt(s, site.listener.url)
      await uploaded(s, 'free/a.txt', 'one')
      await uploaded(s, 'free/a.txt', 'two')
      await vi.waitFor(() => expect(deliveredCount(site.seen, 'free/a.txt')).toBe(1), WAIT)
      expect(site.seen.find((x) => x.ok)!.sequence).toBe(2)
    } finally {
      await close()
    }
  })
})
