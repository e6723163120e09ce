import { sql } from 'kysely'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { uploaded } from './helpers/files.js'
import { type Received, startListener, type TestListener } from './helpers/listener.js'
import {
  ADMIN_USERNAME,
  call,
  dialects,
  expectError,
  grant,
  makeKey,
  makeUser,
  useServer,
} from './helpers/server.js'
import { startSmtp, type TestSmtp } from './helpers/smtp.js'

/** How long and how often to poll for what the dispatcher does after a request returns. */
const WAIT = { timeout: 15_000, interval: 20 }
const DAY = 86_400_000

describe.each(dialects)('webhook endpoints (%s)', (dialect) => {
  let smtp: TestSmtp
  let alerts: TestListener
  /** The server's clock runs this far ahead of the real one (a simulated outage of days). */
  let offset = 0
  beforeAll(async () => {
    smtp = await startSmtp()
    alerts = await startListener()
  })
  const s = useServer(
    dialect,
    () => ({
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
      WEBHOOK_RETRY_SCHEDULE: '0.1,0.1',
      SMTP_URL: smtp.url,
      MAIL_FROM: 'Wharf <wharf@files.example>',
      WEBHOOK_ALERT_URL: alerts.url,
    }),
    { now: () => Date.now() + offset },
  )
  const listeners: TestListener[] = []
  afterEach(async () => {
    offset = 0
    // The site listener notifies nothing in the other tests.
    await call(s, 'PATCH', '/webhook_settings', { key: s.adminKey, body: { enabled: false } })
  })
  afterAll(async () => {
    await Promise.all([...listeners, alerts].map((l) => l.close()))
    await smtp?.close()
  })

  async function listener(answer: Parameters<typeof startListener>[0] = () => 200) {
    const l = await startListener(answer)
    listeners.push(l)
    return l
  }
  /** A webhook behavior on `folder` sending uploads to the URLs; returns its id. */
  async function hook(folder: string, urls: string[]) {
    const r = await call(s, 'POST', '/behaviors', {
      key: s.adminKey,
      body: { path: folder, behavior: 'webhook', value: { urls, triggers: ['Upload'] } },
    })
    expect(r.status, r.text).toBe(201)
    return r.body.id as number
  }
  async function endpoints(key = s.adminKey) {
    const r = await call(s, 'GET', '/webhook_endpoints', { key })
    expect(r.status, r.text).toBe(200)
    return r.body as any[]
  }
  async function endpointOf(url: string) {
    const e = (await endpoints()).find((x) => x.url === url)
    expect(e, url).toBeDefined()
    return e
  }
  const get = async (id: number) => {
    const r = await call(s, 'GET', `/webhook_endpoints/${id}`, { key: s.adminKey })
    expect(r.status, r.text).toBe(200)
    return r.body
  }
  const patch = async (id: number, body: Record<string, unknown>) => {
    const r = await call(s, 'PATCH', `/webhook_endpoints/${id}`, { key: s.adminKey, body })
    expect(r.status, r.text).toBe(200)
    return r.body
  }
  /** A path's notifications to webhook behaviors (not the site listener's). */
  const notificationsOf = (path: string) =>
    s.container.db
      .selectFrom('webhook_notifications')
      .selectAll()
      .where('path', '=', path)
      .where('behavior_id', 'is not', null)
      .execute()
  const stateOf = async (path: string) => (await notificationsOf(path)).map((n) => n.state)
  const pathOf = (r: Received) => r.json?.path as string

  it('lists the site listener and every URL of every webhook behavior, with health, in JSON and XML', async () => {
    const site = await listener()
    const a = await listener()
    const b = await listener()
    const r = await call(s, 'PATCH', '/webhook_settings', {
      key: s.adminKey,
      body: { url: site.url, triggers: ['Upload'], enabled: true },
    })
    expect(r.status, r.text).toBe(200)
    const id = await hook('listed', [a.url, b.url])
    const list = await endpoints()
    const mine = list.filter((e) => [site.url, a.url, b.url].includes(e.url))
    expect(mine.map((e) => [e.behavior_id, e.url, e.state]).sort()).toEqual(
      [
        [null, site.url, 'enabled'],
        [id, a.url, 'enabled'],
        [id, b.url, 'enabled'],
      ].sort(),
    )
    await uploaded(s, 'listed/one.txt', 'x')
    await a.waitFor(1)
    const ea = await vi.waitFor(async () => {
      const e = await get(mine.find((x) => x.url === a.url).id)
      expect(e.hour_attempts).toBe(1)
      expect(e.last_success_at).not.toBeNull()
      return e
    }, WAIT)
    expect(ea).toMatchObject({
      path: 'listed',
      state: 'enabled',
      consecutive_failures: 0,
      last_success_at: expect.any(String),
      last_failure_at: null,
      hour_success_rate: 1,
      day_attempts: 1,
      hour_latency_p50_ms: expect.any(Number),
      hour_latency_p99_ms: expect.any(Number),
      queued_count: 0,
      oldest_queued_at: null,
      file_aware: false,
    })
    const xml = await call(s, 'GET', `/webhook_endpoints/${ea.id}`, {
      key: s.adminKey,
      accept: 'application/xml',
    })
    expect(xml.status).toBe(200)
    expect(xml.text).toContain('<webhook-endpoint>')
    expect(xml.text).toContain(`<url>${a.url}</url>`)
    // A behavior's URL removed: its endpoint goes; the listener's URL changed: its endpoint follows.
    const p = await call(s, 'PATCH', `/behaviors/${id}`, {
      key: s.adminKey,
      body: { value: { urls: [a.url], triggers: ['Upload'] } },
    })
    expect(p.status, p.text).toBe(200)
    const other = await listener()
    await call(s, 'PATCH', '/webhook_settings', { key: s.adminKey, body: { url: other.url } })
    const after = await endpoints()
    expect(after.some((e) => e.url === b.url)).toBe(false)
    const siteEndpoint = after.find((e) => e.behavior_id === null)
    expect(siteEndpoint.url).toBe(other.url)
    expect(siteEndpoint.id).toBe(mine.find((x) => x.behavior_id === null).id)
    const d = await call(s, 'DELETE', `/behaviors/${id}`, { key: s.adminKey })
    expect(d.status).toBe(204)
    expect((await endpoints()).some((e) => e.behavior_id === id)).toBe(false)
  })

  it('refuses what a caller may not do', async () => {
    const l = await listener()
    const id = await hook('guarded', [l.url])
    const e = await endpointOf(l.url)
    await call(s, 'PATCH', '/webhook_settings', { key: s.adminKey, body: { url: l.url } })
    const site = (await endpoints()).find((x) => x.behavior_id === null)
    const plain = await makeUser(s)
    const plainKey = (await makeKey(s, plain.id)).key
    expectError(
      await call(s, 'GET', '/webhook_endpoints', { key: plainKey }),
      403,
      'not-authorized/folder-admin-permission-required',
    )
    // A folder admin sees and manages the behaviors' endpoints inside their folders only.
    const folderAdmin = await makeUser(s)
    await call(s, 'POST', '/folders/elsewhere', { key: s.adminKey })
    await grant(s, folderAdmin.id, 'elsewhere', 'admin')
    const faKey = (await makeKey(s, folderAdmin.id)).key
    expect(await endpoints(faKey)).toEqual([])
    expectError(
      await call(s, 'GET', `/webhook_endpoints/${e.id}`, { key: faKey }),
      403,
      'not-authorized/folder-admin-permission-required',
    )
    expectError(
      await call(s, 'PATCH', `/webhook_endpoints/${site.id}`, { key: faKey, body: { state: 'paused' } }),
      403,
      'not-authorized/site-admin-required',
    )
    await call(s, 'POST', '/folders/guarded', { key: s.adminKey })
    await grant(s, folderAdmin.id, 'guarded', 'admin')
    expect((await endpoints(faKey)).map((x) => x.behavior_id)).toEqual([id])
    expectError(await call(s, 'GET', '/webhook_endpoints/999999', { key: s.adminKey }), 404, 'not-found')
    const bad = await call(s, 'PATCH', `/webhook_endpoints/${e.id}`, {
      key: s.adminKey,
      body: { state: 'disabled' },
    })
    expectError(bad, 422, 'processing-failure/model-save-error')
    expectError(
      await call(s, 'POST', `/webhook_endpoints/${e.id}/recover`, {
        key: s.adminKey,
        body: { since: '2026-01-02T00:00:00Z', until: '2026-01-01T00:00:00Z' },
      }),
      422,
      'processing-failure/model-save-error',
    )
    expectError(
      await call(s, 'POST', '/webhook_attempts/999999/resend', { key: s.adminKey }),
      404,
      'not-found',
    )
  })

  it('disables an endpoint failing for days, keeps its notifications, and sends them in order once enabled', async () => {
    // The site admin hears of it by mail.
    await s.container.db
      .updateTable('users')
      .set({ email: 'admin@files.example' })
      .where('username', '=', ADMIN_USERNAME)
      .execute()
    let failing = true
    const l = await listener(() => (failing ? 500 : 200))
    await hook('outage', [l.url])
    const e = await endpointOf(l.url)
    // One at a time: what was kept arrives in the order it was made.
    await patch(e.id, { concurrency: 1 })
    await uploaded(s, 'outage/1.txt', 'x')
    await vi.waitFor(async () => expect(await stateOf('outage/1.txt')).toEqual(['failed']), WAIT)
    expect(await get(e.id)).toMatchObject({
      state: 'failing',
      consecutive_failures: 3,
      last_failure_reason: 'HTTP 500 Internal Server Error',
    })
    // Six days later it still fails: disabled.
    offset += 6 * DAY
    await uploaded(s, 'outage/2.txt', 'x')
    await vi.waitFor(async () => expect((await get(e.id)).state).toBe('disabled'), WAIT)
    const disabled = await get(e.id)
    expect(disabled.disabled_reason).toMatch(/^Failing continuously since/)
    // Admins hear of it by mail and by the operational webhook.
    const [mail] = await smtp.waitFor(1)
    expect(mail!.to).toEqual(['admin@files.example'])
    expect(mail!.header('subject')).toBe(`Webhook endpoint disabled: ${l.url}`)
    const [alert] = await alerts.waitFor(1)
    expect(alert!.json).toMatchObject({
      event: 'webhook_endpoint.disabled',
      endpoint: { id: e.id, state: 'disabled' },
    })
    // Its notifications are kept, not attempted.
    failing = false
    await uploaded(s, 'outage/3.txt', 'x')
    await uploaded(s, 'outage/4.txt', 'x')
    await vi.waitFor(async () => {
      expect(await stateOf('outage/2.txt')).toEqual(['held'])
      expect(await stateOf('outage/3.txt')).toEqual(['held'])
      expect(await stateOf('outage/4.txt')).toEqual(['held'])
    }, WAIT)
    const sentBefore = l.received.length
    expect(l.received.map(pathOf).filter((p) => p !== 'outage/1.txt' && p !== 'outage/2.txt')).toEqual([])
    expect((await get(e.id)).queued_count).toBe(3)
    // Enabled again: sent, in order.
    const enabled = await patch(e.id, { state: 'enabled' })
    expect(enabled).toMatchObject({ state: 'enabled', consecutive_failures: 0 })
    await l.waitFor(sentBefore + 3)
    expect(l.received.slice(sentBefore).map(pathOf)).toEqual(['outage/2.txt', 'outage/3.txt', 'outage/4.txt'])
    await vi.waitFor(async () => expect((await get(e.id)).queued_count).toBe(0), WAIT)
    const [, back] = await alerts.waitFor(2)
    expect(back!.json).toMatchObject({ event: 'webhook_endpoint.enabled', endpoint: { id: e.id } })
  })

  it('disables an endpoint at once on 410 Gone; a pause keeps, and discard_queued drops, what waits', async () => {
    const l = await listener(() => 410)
    await hook('gone', [l.url])
    const e = await endpointOf(l.url)
    await uploaded(s, 'gone/1.txt', 'x')
    await vi.waitFor(async () => expect((await get(e.id)).state).toBe('disabled'), WAIT)
    expect((await get(e.id)).disabled_reason).toBe('The listener answered 410 Gone')
    expect(l.received).toHaveLength(1)
    // Its retry is kept, not sent.
    await vi.waitFor(async () => expect(await stateOf('gone/1.txt')).toEqual(['held']), WAIT)
    // Paused instead of disabled, then enabled with discard_queued: nothing kept is sent.
    await patch(e.id, { state: 'paused' })
    await uploaded(s, 'gone/2.txt', 'x')
    await vi.waitFor(async () => expect(await stateOf('gone/2.txt')).toEqual(['held']), WAIT)
    expect((await get(e.id)).state).toBe('paused')
    l.answer(() => 200)
    await patch(e.id, { state: 'enabled', discard_queued: true })
    expect(await stateOf('gone/1.txt')).toEqual(['dropped'])
    expect(await stateOf('gone/2.txt')).toEqual(['dropped'])
    await uploaded(s, 'gone/3.txt', 'x')
    await vi.waitFor(() => expect(l.received.map(pathOf)).toContain('gone/3.txt'), WAIT)
    // gone/1 was not tried again after its 410.
    expect(l.received.map(pathOf).filter((p) => p === 'gone/1.txt')).toHaveLength(1)
    expect(l.received.map(pathOf).filter((p) => p === 'gone/2.txt')).toEqual([])
  })

  it('recovers past notifications with their event ids, a dry run counting them first', async () => {
    const l = await listener()
    await hook('recovered', [l.url])
    const e = await endpointOf(l.url)
    await patch(e.id, { concurrency: 1 })
    for (const n of [1, 2, 3]) await uploaded(s, `recovered/${n}.txt`, 'x')
    await l.waitFor(3)
    await vi.waitFor(async () => expect(await stateOf('recovered/3.txt')).toEqual(['delivered']), WAIT)
    const ids = l.received.map((r) => r.headers['webhook-id'])
    const recover = (body: Record<string, unknown>) =>
      call(s, 'POST', `/webhook_endpoints/${e.id}/recover`, { key: s.adminKey, body })
    const dry = await recover({ dry_run: true })
    expect(dry.status, dry.text).toBe(200)
    expect(dry.body).toEqual({ endpoint_id: e.id, dry_run: true, count: 3 })
    expect((await recover({ dry_run: true, only_failed: true })).body.count).toBe(0)
    expect(
      (await recover({ dry_run: true, since: new Date(Date.now() + 60_000).toISOString() })).body.count,
    ).toBe(0)
    expect(l.received).toHaveLength(3)
    const real = await recover({})
    expect(real.body).toEqual({ endpoint_id: e.id, dry_run: false, count: 3 })
    await l.waitFor(6)
    expect(l.received.slice(3).map((r) => r.headers['webhook-id'])).toEqual(ids)
    expect(l.received.slice(3).map(pathOf)).toEqual(['recovered/1.txt', 'recovered/2.txt', 'recovered/3.txt'])
  })

  it('gathers the outbox statistics again once enables have released a thousand kept notifications', async () => {
    const l = await listener()
    // One behavior, two URLs: two endpoints, 500 kept for each.
    const urls = [`${l.url}/a`, `${l.url}/b`]
    const behavior = await hook('many', urls)
    const eps = await Promise.all(urls.map(endpointOf))
    for (const e of eps) await patch(e.id, { state: 'paused' })
    const now = Date.now()
    for (const [n, url] of urls.entries()) {
      const rows = Array.from({ length: 500 }, (_, i) => ({
        site_id: s.container.site.id,
        action_id: null,
        message_id: `msg_many_${n}_${i}`,
        operation: 'Upload',
        user_id: null,
        username: ADMIN_USERNAME,
        protocol: 'restapi',
        path: `many/${n}-${i}.txt`,
        folder: 'many',
        sourcepath: '',
        state: 'held' as const,
        max_attempts: 0,
        next_attempt_at: null,
        lease_owner: null,
        lease_until: null,
        behavior_id: behavior,
        url,
        order_key: null,
        sequence: null,
        created_at: now,
        updated_at: now,
      }))
      await s.container.db.insertInto('webhook_notifications').values(rows).execute()
    }
    // PostgreSQL counts the table's analyses; SQLite keeps no statistics to gather.
    const analyses = async () => {
      if (dialect !== 'postgres') return 0
      const r = await sql<{
        n: string
      }>`select analyze_count as n from pg_stat_user_tables where relid = 'webhook_notifications'::regclass`.execute(
        s.container.db,
      )
      return Number(r.rows[0]!.n)
    }
    const before = await analyses()
    // The first enable alone releases too few; with the second, the thousand are reached.
    await patch(eps[0].id, { state: 'enabled' })
    await s.container.services.webhookEndpoints.statistics.settled()
    expect(await analyses()).toBe(before)
    await patch(eps[1].id, { state: 'enabled' })
    await s.container.services.webhookEndpoints.statistics.settled()
    if (dialect === 'postgres') await vi.waitFor(async () => expect(await analyses()).toBe(before + 1), WAIT)
    await l.waitFor(1000, WAIT.timeout)
    expect(new Set(l.received.map(pathOf)).size).toBe(1000)
  })

  it('lists attempts per endpoint with cursor paging, and resends one with its event id', async () => {
    const l = await listener((_r, n) => (n === 0 ? 503 : 200))
    await hook('attempted', [l.url])
    const e = await endpointOf(l.url)
    await uploaded(s, 'attempted/a.txt', 'x')
    await l.waitFor(2)
    const page = await vi.waitFor(async () => {
      const r = await call(s, 'GET', `/webhook_endpoints/${e.id}/attempts?per_page=1`, { key: s.adminKey })
      expect(r.status, r.text).toBe(200)
      expect(r.headers.get('x-files-cursor-next')).toBeTruthy()
      return r
    }, WAIT)
    expect(page.body).toEqual([
      expect.objectContaining({
        endpoint_id: e.id,
        attempt: 1,
        status: 'failure',
        response_code: 503,
        error: 'HTTP 503 Service Unavailable',
        event_id: l.received[0]!.headers['webhook-id'],
        path: 'attempted/a.txt',
      }),
    ])
    const next = await call(
      s,
      'GET',
      `/webhook_endpoints/${e.id}/attempts?per_page=1&cursor=${encodeURIComponent(page.headers.get('x-files-cursor-next')!)}`,
      { key: s.adminKey },
    )
    expect(next.body).toEqual([
      expect.objectContaining({ attempt: 2, status: 'success', response_code: 200, error: null }),
    ])
    const r = await call(s, 'POST', `/webhook_attempts/${next.body[0].id}/resend`, { key: s.adminKey })
    expect(r.status, r.text).toBe(204)
    const [, , again] = await l.waitFor(3)
    expect(again!.headers['webhook-id']).toBe(l.received[0]!.headers['webhook-id'])
    expect(again!.json.attempt).toBe(3)
  })

  it('holds an endpoint to its concurrency cap', async () => {
    let inflight = 0
    let most = 0
    const l = await listener(async () => {
      inflight++
      most = Math.max(most, inflight)
      // Long enough for the others to arrive if nothing held them back.
      await new Promise((r) => setTimeout(r, 150))
      inflight--
      return 200
    })
    await hook('capped', [l.url])
    const e = await endpointOf(l.url)
    await patch(e.id, { concurrency: 1 })
    const files = ['capped/1.txt', 'capped/2.txt', 'capped/3.txt']
    await Promise.all(files.map((f) => uploaded(s, f, 'x')))
    await l.waitFor(3)
    expect(most).toBe(1)
    // Uncapped, the same three go at once.
    await patch(e.id, { concurrency: null })
    most = 0
    await Promise.all(files.map((f) => uploaded(s, f.replace('.txt', 'b.txt'), 'x')))
    await l.waitFor(6)
    expect(most).toBeGreaterThan(1)
  })

  it('gives a file-aware endpoint the version that fired the event, with a fresh link at each attempt', async () => {
    let uploadedAgain!: () => void
    const replaced = new Promise<void>((r) => {
      uploadedAgain = r
    })
    const fetched: string[] = []
    const fetchLink = async (r: Received) => {
      const link = new URL(r.json.file_download_url)
      const res = await fetch(`${s.url}${link.pathname}`)
      fetched.push(`${res.status} ${await res.text()}`)
    }
    // The first upload's event fails twice, then succeeds; the listener fetches its link on
    // attempts 1 and 3. The new version's own event is taken at once.
    let firstId: unknown
    const l = await listener(async (r) => {
      firstId ??= r.headers['webhook-id']
      if (r.headers['webhook-id'] !== firstId) return 200
      if (r.json.attempt === 1) await fetchLink(r)
      if (r.json.attempt === 2) await replaced
      if (r.json.attempt === 3) {
        await fetchLink(r)
        return 200
      }
      return 500
    })
    // file_sha256 comes with the checksum job (webhook-file-sha256.test.ts): none runs here.
    await s.container.checksums.stop()
    await hook('aware', [l.url])
    const plain = await listener()
    await hook('aware', [plain.url])
    const e = await endpointOf(l.url)
    expect((await patch(e.id, { file_aware: true })).file_aware).toBe(true)
    await uploaded(s, 'aware/report.csv', 'version one')
    await l.waitFor(2)
    await uploaded(s, 'aware/report.csv', 'version two, longer')
    uploadedAgain()
    await l.waitFor(4)
    const mine = l.received.filter((r) => r.headers['webhook-id'] === firstId)
    const [first, , third] = mine
    await vi.waitFor(() => expect(fetched).toHaveLength(2), WAIT)
    // Attempt 3 came after the new version: it still links to the bytes that fired it.
    expect(fetched).toEqual(['200 version one', '200 version one'])
    for (const [r, attempt] of [
      [first!, 1],
      [third!, 3],
    ] as const) {
      expect(r.json).toEqual({
        accountname: expect.any(String),
        username: '',
        operation: 'Upload',
        protocol: 'restapi',
        path: 'aware/report.csv',
        sourcepath: '',
        attempt,
        file_size: 11,
        file_sha256: null,
        file_version_id: expect.stringMatching(/^ver_/),
        file_download_url: expect.stringContaining('/api/rest/v1/downloads/'),
        file_download_expires_at: expect.any(String),
      })
    }
    expect(third!.json.file_version_id).toBe(first!.json.file_version_id)
    await s.container.checksums.start()
    // An endpoint without the option gets the body exactly as before.
    await plain.waitFor(2)
    expect(Object.keys(plain.received[0]!.json)).toEqual([
      'accountname',
      'username',
      'operation',
      'protocol',
      'path',
      'sourcepath',
      'attempt',
    ])
  })
})
