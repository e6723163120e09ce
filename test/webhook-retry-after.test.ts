import { afterAll, describe, expect, it, vi } from 'vitest'
import { type Received, startListener, type TestListener } from './helpers/listener.js'
import { call, dialects, useServer } from './helpers/server.js'

const WAIT = { timeout: 15_000, interval: 20 }
/** The server's clock: still, unless a test moves it, so a retry's delay is read exactly. */
const START = Date.UTC(2026, 10, 2, 12)

/**
 * Retry timing against a real listener answering 429 or 503: a `Retry-After` is honoured within
 * the schedule's bounds (no shorter than the attempt's scheduled delay, no longer than the
 * schedule's longest), and retries get jitter.
 */
describe.each(dialects)('webhook retries after 429 and 503 (%s)', (dialect) => {
  let clock = START
  const s = useServer(
    dialect,
    {
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
      // Seconds: the first retry after 10, the longest wait 600.
      WEBHOOK_RETRY_SCHEDULE: '10,60,600',
      RATE_LIMIT_PER_SECOND: '100000',
      RATE_LIMIT_BURST: '100000',
    },
    { now: () => clock },
  )
  /** How the listener answers a folder's notification, by the folder's name. */
  const answers = new Map<
    string,
    (r: Received) => number | { status: number; headers: Record<string, string> }
  >()
  let l: TestListener
  afterAll(async () => {
    await l?.close()
  })

  /** The delay before the retry of each folder's notification, once its first attempt failed. */
  async function retryDelays(folders: string[]): Promise<number[]> {
    const rows = await vi.waitFor(async () => {
      const rows = await s.container.db
        .selectFrom('webhook_notifications')
        .select(['path', 'attempts', 'next_attempt_at', 'created_at'])
        .where('path', 'in', folders)
        .execute()
      expect(rows.filter((r) => Number(r.attempts) === 1 && r.next_attempt_at !== null)).toHaveLength(
        folders.length,
      )
      return rows
    }, WAIT)
    // The clock stands still: the attempt was made, and answered, at the notification's creation.
    return folders.map((f) => {
      const r = rows.find((x) => x.path === f)!
      return Number(r.next_attempt_at) - Number(r.created_at)
    })
  }

  it('honours Retry-After within the schedule, jittered, and retries when it says', async () => {
    l = await startListener((r) => answers.get(r.json?.path)?.(r) ?? 200)
    const set = await call(s, 'PATCH', '/webhook_settings', {
      key: s.adminKey,
      body: { url: l.url, triggers: ['Create Folder'], enabled: true },
    })
    expect(set.status, set.text).toBe(200)
    const ra = (status: number, value: string) => (r: Received) =>
      r.json.attempt === 1 ? { status, headers: { 'Retry-After': value } } : 200
    answers.set('ra-short', ra(429, '3'))
    answers.set('ra-mid', ra(429, '30'))
    answers.set('ra-long', ra(503, '100000'))
    // A date is read against the real clock (the one the listener's date speaks of).
    answers.set('ra-date', ra(503, new Date(Date.now() + 45_000).toUTCString()))
    const folders = ['ra-short', 'ra-mid', 'ra-long', 'ra-date']
    for (const f of folders) {
      const r = await call(s, 'POST', `/folders/${f}`, { key: s.adminKey })
      expect(r.status, r.text).toBe(201)
    }
    const [short, mid, long, date] = await retryDelays(folders)
    // Shorter than the scheduled 10 s: the schedule's delay, with its jitter.
    expect(short).toBeGreaterThanOrEqual(10_000)
    expect(short).toBeLessThanOrEqual(12_000)
    // Within the bounds: what the listener asked, plus up to 20% jitter.
    expect(mid).toBeGreaterThanOrEqual(30_000)
    expect(mid).toBeLessThanOrEqual(36_000)
    // (an HTTP date has whole seconds: 44 to 45 s from the answer)
    expect(date).toBeGreaterThanOrEqual(44_000)
    expect(date).toBeLessThanOrEqual(54_000)
    // Past the schedule's longest delay (600 s): that longest delay, not a day.
    expect(long).toBe(600_000)
    // Honoured: the retry goes once the time the listener asked for has come.
    const sent = l.received.length
    clock = START + mid!
    const retried = () => l.received.slice(sent).map((r) => `${r.json.path} ${r.json.attempt}`)
    await vi.waitFor(() => expect(retried().sort()).toEqual(['ra-mid 2', 'ra-short 2']), WAIT)
    // The later ones still wait for theirs.
    expect(await retryDelays(['ra-long', 'ra-date'])).toEqual([long, date])
  })

  it('gives retries of the same attempt different delays (jitter)', async () => {
    const folders = Array.from({ length: 6 }, (_, i) => `jit-${i}`)
    for (const f of folders) answers.set(f, (r) => (r.json.attempt === 1 ? 500 : 200))
    for (const f of folders) {
      const r = await call(s, 'POST', `/folders/${f}`, { key: s.adminKey })
      expect(r.status, r.text).toBe(201)
    }
    const delays = await retryDelays(folders)
    for (const d of delays) {
      expect(d).toBeGreaterThanOrEqual(10_000)
      expect(d).toBeLessThanOrEqual(12_000)
    }
    // Six draws of 2,000 possible milliseconds: all alike only if there were no jitter.
    expect(new Set(delays).size).toBeGreaterThan(1)
  })
})
