import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { EventJson } from '../src/modules/webhooks/event-feed.js'
import { uploaded } from './helpers/files.js'
import { type Received, startListener, type TestListener } from './helpers/listener.js'
import { call, dialects, expectError, makeKey, makeUser, useServer } from './helpers/server.js'

const WAIT = { timeout: 20_000, interval: 20 }

type Event = EventJson

describe.each(dialects)('GET /events and /events/{id}/attempts (%s)', (dialect) => {
  let site: TestListener
  let folder: TestListener
  let behaviorId: number
  const s = useServer(
    dialect,
    { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_RETRY_SCHEDULE: '0.1,0.1' },
    { resolver: async () => [{ address: '127.0.0.2', family: 4 }] },
  )
  const get = (path: string) => call(s, 'GET', path, { key: s.adminKey })
  const delivered = async (count: number) =>
    vi.waitFor(async () => {
      const rows = await s.container.db
        .selectFrom('webhook_notifications')
        .select('state')
        .where('action_id', 'is not', null)
        .execute()
      expect(rows.filter((r) => r.state === 'delivered')).toHaveLength(count)
    }, WAIT)

  beforeAll(async () => {
    // The site's listener refuses the first attempt of the first upload.
    let refused = false
    site = await startListener((r) => {
      if (refused || r.json?.path !== 'feed/a.txt') return 200
      refused = true
      return 500
    })
    folder = await startListener()
    const set = await call(s, 'PATCH', '/webhook_settings', {
      key: s.adminKey,
      body: { url: site.url, triggers: ['Upload', 'Delete', 'Create Folder'], enabled: true },
    })
    expect(set.status, set.text).toBe(200)
    const made = await call(s, 'POST', '/behaviors', {
      key: s.adminKey,
      body: { path: 'feed/b', behavior: 'webhook', value: { urls: [folder.url], triggers: ['Upload'] } },
    })
    expect(made.status, made.text).toBe(201)
    behaviorId = made.body.id
    await uploaded(s, 'feed/a.txt', 'one')
    await uploaded(s, 'feed/b/x.txt', 'two')
    expect((await call(s, 'DELETE', '/files/feed/a.txt', { key: s.adminKey })).status).toBe(204)
    // feed, feed/b: made by the uploads (Create Folder); then a.txt, b/x.txt (twice: site and
    // behavior), the deletion.
    await delivered(6)
    // A test is no event.
    expect((await call(s, 'POST', '/webhook_settings/test', { key: s.adminKey })).status).toBe(200)
  })
  afterAll(async () => {
    await site?.close()
    await folder?.close()
  })

  /** Every event of a query, page by page; the last cursor too. */
  async function walk(query: string, perPage: number): Promise<{ events: Event[]; cursor: string }> {
    const events: Event[] = []
    let cursor: string | null = null
    for (;;) {
      const sep = query.includes('?') ? '&' : '?'
      const r = await get(
        `${query}${sep}per_page=${perPage}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      )
      expect(r.status, r.text).toBe(200)
      const next = r.headers.get('X-Files-Cursor-Next')
      expect(next).not.toBeNull()
      if (r.body.length === 0) {
        expect(next).toBe(cursor)
        return { events, cursor: next! }
      }
      events.push(...r.body)
      cursor = next
    }
  }

  it('lists the events the endpoints were sent, with their webhook-id and sequence, and resumes from a cursor', async () => {
    const { events: all, cursor: last } = await walk('/events', 2)
    const sent: [TestListener, number | null][] = [
      [site, null],
      [folder, behaviorId],
    ]
    let count = 0
    for (const [l, behavior] of sent) {
      // One event per request's webhook-id, the same fields as the body the endpoint got.
      const byId = new Map<string, Received>()
      for (const r of l.received)
        if (r.json?.operation !== 'Test') byId.set(String(r.headers['webhook-id']), r)
      const mine = all.filter((e) => e.behavior_id === behavior)
      expect(mine.map((e) => e.webhook_id).sort()).toEqual([...byId.keys()].sort())
      for (const e of mine) {
        const r = byId.get(e.webhook_id)!
        const { attempt: _, ...fields } = r.json
        expect(fields).toEqual({
          accountname: e.accountname,
          username: e.username,
          operation: e.operation,
          protocol: e.protocol,
          path: e.path,
          sourcepath: e.sourcepath,
        })
        expect(String(e.sequence)).toBe(r.headers['webhook-sequence'])
        expect(e.url).toBe(behavior === null ? null : folder.url)
        expect(e.state).toBe('delivered')
        expect(e.next_attempt_at).toBeNull()
        expect(e.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
      }
      count += mine.length
    }
    expect(count).toBe(all.length)
    expect(all.map((e) => e.id)).toEqual([...all.map((e) => e.id)].sort((a, b) => a - b))
    expect(
      all.filter((e) => e.path === 'feed/a.txt').map((e) => [e.operation, e.sequence, e.attempts]),
    ).toEqual([
      ['Upload', 1, 2],
      ['Delete', 2, 1],
    ])

    // Resuming: the cursor the last page gave brings only what came after it, however it paged.
    await uploaded(s, 'feed/c.txt', 'three')
    await delivered(7)
    const resumed = await get(`/events?cursor=${encodeURIComponent(last)}`)
    expect(resumed.status, resumed.text).toBe(200)
    expect((resumed.body as Event[]).map((e) => [e.operation, e.path])).toEqual([['Upload', 'feed/c.txt']])
    const { events: again } = await walk('/events', 3)
    expect(again.slice(0, all.length)).toEqual(all)
    expect(again).toHaveLength(all.length + 1)
  })

  it('filters by path prefix, operation, time and endpoint', async () => {
    const paths = async (q: string) => {
      const r = await get(`/events?${q}`)
      expect(r.status, r.text).toBe(200)
      return (r.body as Event[]).map((e) => `${e.behavior_id ?? 'site'} ${e.operation} ${e.path}`)
    }
    expect(await paths('filter_prefix[path]=FEED/B/')).toEqual([
      'site Upload feed/b/x.txt',
      `${behaviorId} Upload feed/b/x.txt`,
    ])
    expect(await paths('filter[operation]=Delete')).toEqual(['site Delete feed/a.txt'])
    expect(await paths(`behavior_id=${behaviorId}`)).toEqual([`${behaviorId} Upload feed/b/x.txt`])
    expect((await paths('behavior_id=0')).every((p) => p.startsWith('site '))).toBe(true)
    expect(await paths('filter_gteq[created_at]=2999-01-01T00:00:00Z')).toEqual([])
    expect((await paths('filter_lt[created_at]=2999-01-01T00:00:00Z')).length).toBeGreaterThan(0)
    expectError(await get('/events?filter[folder]=x'), 400, 'bad-request/invalid-filter-field')
    expectError(await get('/events?filter_gteq[created_at]=soon'), 400, 'bad-request/datetime-parse')
    expectError(await get('/events?behavior_id=-1'), 400, 'bad-request/request-params-invalid')
    // A cursor is for the query it was made for.
    const first = await get('/events?per_page=1&behavior_id=0')
    expectError(
      await get(`/events?cursor=${encodeURIComponent(first.headers.get('X-Files-Cursor-Next')!)}`),
      400,
      'bad-request/invalid-cursor',
    )
  })

  it('lists an event’s attempts, page by page, as the log records them', async () => {
    const [upload] = (
      await get('/events?filter[operation]=Upload&filter_prefix[path]=feed/a.txt&behavior_id=0')
    ).body as Event[]
    const first = await get(`/events/${upload!.id}/attempts?per_page=1`)
    expect(first.status, first.text).toBe(200)
    expect(first.body).toHaveLength(1)
    const second = await get(
      `/events/${upload!.id}/attempts?per_page=1&cursor=${encodeURIComponent(first.headers.get('X-Files-Cursor-Next')!)}`,
    )
    const attempts = [...first.body, ...second.body]
    expect(attempts.map((a) => [a.event_id, a.attempt, a.success, a.status])).toEqual([
      [upload!.id, 1, false, 500],
      [upload!.id, 2, true, 200],
    ])
    for (const a of attempts) {
      expect(JSON.parse(a.request_headers)['webhook-id']).toBe(upload!.webhook_id)
      expect(a.request_url).toBe(site.url)
      expect(a.behavior_id).toBeNull()
      expect(JSON.parse(a.request_body)).toMatchObject({ path: 'feed/a.txt', attempt: a.attempt })
    }
    const log = await s.container.db
      .selectFrom('webhook_attempts')
      .select('id')
      .where('notification_id', '=', upload!.id)
      .orderBy('id')
      .execute()
    expect(attempts.map((a) => a.id)).toEqual(log.map((l) => Number(l.id)))

    const test = await s.container.db
      .selectFrom('webhook_notifications')
      .select('id')
      .where('operation', '=', 'Test')
      .executeTakeFirstOrThrow()
    expectError(await get(`/events/${test.id}/attempts`), 404, 'not-found')
    expectError(await get('/events/999999/attempts'), 404, 'not-found')
    expectError(await get('/events/abc/attempts'), 400, 'bad-request/request-params-invalid')
  })

  it('speaks XML', async () => {
    const r = await get('/events.xml?per_page=1')
    expect(r.status, r.text).toBe(200)
    expect(r.text).toMatch(
      /<events type="array">\n {2}<event>\n {4}<id type="integer">\d+<\/id>\n {4}<webhook_id>msg_/,
    )
    const id = Number(/<id type="integer">(\d+)<\/id>/.exec(r.text)![1])
    const a = await get(`/events/${id}/attempts.xml`)
    expect(a.status, a.text).toBe(200)
    expect(a.text).toContain('<event-attempts type="array">')
    expect(a.text).toContain(`<event_id type="integer">${id}</event_id>`)
  })

  it('is for site administrators only', async () => {
    const plain = await makeUser(s)
    const key = (await makeKey(s, plain.id)).key
    expectError(await call(s, 'GET', '/events', { key }), 403, 'not-authorized/site-admin-required')
    expectError(
      await call(s, 'GET', '/events/1/attempts', { key }),
      403,
      'not-authorized/site-admin-required',
    )
    expectError(await call(s, 'GET', '/events'), 401, 'not-authenticated/authentication-required')
  })
})
