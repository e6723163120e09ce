import crypto from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { req, target, uploaded } from './helpers/files.js'
import { type Received, startListener, type TestListener } from './helpers/listener.js'
import { call, dialects, expectError, grant, makeKey, makeUser, useServer } from './helpers/server.js'
import { readyExport, walkResults } from './helpers/webhook-log-fixtures.js'

/** How long and how often to poll for what the dispatcher does after a request returns. */
const WAIT = { timeout: 10_000, interval: 20 }

const md5 = (s: string) => crypto.createHash('md5').update(s).digest('hex')

/** The path a request carried, whatever its encoding (JSON, XML, form, or GET's query string). */
function pathOf(r: Received): string | undefined {
  if (r.json?.path !== undefined) return r.json.path
  if (r.method === 'GET') return new URL(r.url, 'http://x').searchParams.get('path') ?? undefined
  if (String(r.headers['content-type']).startsWith('application/x-www-form-urlencoded'))
    return new URLSearchParams(r.body).get('path') ?? undefined
  return /<path>([^<]*)<\/path>/.exec(r.body)?.[1]
}

describe.each(dialects)('webhook behaviors (%s)', (dialect) => {
  let a: TestListener
  let b: TestListener
  let site: TestListener
  const s = useServer(
    dialect,
    { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_RETRY_SCHEDULE: '0.1' },
    // A host name stands for an address outside the allowed range.
    { resolver: async () => [{ address: '127.0.0.2', family: 4 }] },
  )

  beforeAll(async () => {
    a = await startListener()
    b = await startListener()
    site = await startListener()
    const r = await call(s, 'PATCH', '/webhook_settings', {
      key: s.adminKey,
      body: { url: site.url, triggers: ['Upload'], enabled: true },
    })
    expect(r.status, r.text).toBe(200)
  })
  afterAll(async () => {
    await Promise.all([a, b, site].map((l) => l?.close()))
  })

  /** Creates a webhook behavior through the API; returns its id. */
  async function hook(path: string, value: Record<string, unknown>, more: Record<string, unknown> = {}) {
    const r = await call(s, 'POST', '/behaviors', {
      key: s.adminKey,
      body: { path, behavior: 'webhook', value, ...more },
    })
    expect(r.status, r.text).toBe(201)
    return r.body.id as number
  }

  const to = (l: TestListener, path: string) => l.received.filter((r) => pathOf(r) === path)
  /** Waits until `l` received `count` requests for `path`. */
  const receivedAt = (l: TestListener, path: string, count = 1) =>
    vi.waitFor(() => {
      const got = to(l, path)
      expect(got.length).toBeGreaterThanOrEqual(count)
      return got
    }, WAIT)
  /** The notifications written for a behavior, by path (written in the Action's transaction). */
  const notified = async (behaviorId: number) =>
    (
      await s.container.db
        .selectFrom('webhook_notifications')
        .select(['path', 'operation', 'url'])
        .where('behavior_id', '=', behaviorId)
        .orderBy('id')
        .execute()
    ).map((n) => `${n.operation} ${n.path}`)
  const attemptsOf = (path: string) =>
    s.container.db.selectFrom('webhook_attempts').selectAll().where('path', '=', path).orderBy('id').execute()

  it('delivers to each URL of a behavior on its own, and the site listener still gets its own', async () => {
    const id = await hook('two', { urls: [a.url, b.url], triggers: ['Upload'] })
    await uploaded(s, 'two/report.txt', 'x')
    const [atA] = await receivedAt(a, 'two/report.txt')
    const [atB] = await receivedAt(b, 'two/report.txt')
    const [atSite] = await receivedAt(site, 'two/report.txt')
    // Three notifications: three message ids.
    const ids = new Set([atA, atB, atSite].map((r) => r!.headers['webhook-id']))
    expect(ids.size).toBe(3)
    expect(atA!.json).toEqual({
      accountname: expect.any(String),
      // A site-wide key acts as no user.
      username: '',
      operation: 'Upload',
      protocol: 'restapi',
      path: 'two/report.txt',
      sourcepath: '',
      attempt: 1,
    })
    // No verification token: neither signature is sent; the Standard Webhooks id and time are.
    expect(atA!.headers['x-service-signature']).toBeUndefined()
    expect(atA!.headers['webhook-signature']).toBeUndefined()
    expect(atA!.headers['webhook-timestamp']).toMatch(/^\d+$/)
    const log = await vi.waitFor(async () => {
      const rows = await attemptsOf('two/report.txt')
      expect(rows).toHaveLength(3)
      return rows
    }, WAIT)
    expect(
      log
        .map((r) => [r.behavior_id === null ? null : Number(r.behavior_id), r.request_url, r.success])
        .sort(),
    ).toEqual(
      [
        [id, a.url, 1],
        [id, b.url, 1],
        [null, site.url, 1],
      ].sort(),
    )
  })

  it('matches triggering and exclude globs on the file name, ignoring case', async () => {
    const id = await hook('globs', {
      urls: [a.url],
      triggering_filenames: ['*.CSV', 'in/*.txt'],
      exclude_filenames: ['~*'],
    })
    for (const p of ['globs/a.csv', 'globs/b.txt', 'globs/~c.csv', 'globs/d.Csv']) await uploaded(s, p, 'x')
    await receivedAt(a, 'globs/d.Csv')
    expect(await notified(id)).toEqual(['Upload globs/a.csv', 'Upload globs/d.Csv'])
  })

  it('takes the listener’s operation names and the Action verbs as triggers', async () => {
    const id = await hook('trig', { urls: [b.url], triggers: ['destroy', 'Copy'] })
    const t = target(s)
    await uploaded(s, 'trig/x.txt', 'x')
    expect((await req(t, 'DELETE', '/files/trig/x.txt')).status).toBe(204)
    await uploaded(s, 'trig/y.txt', 'y')
    expect(
      (await req(t, 'POST', '/file_actions/copy/trig/y.txt', { destination: 'trig/z.txt' })).status,
    ).toBe(201)
    expect(
      (await req(t, 'POST', '/file_actions/move/trig/y.txt', { destination: 'trig/w.txt' })).status,
    ).toBe(201)
    await receivedAt(b, 'trig/z.txt')
    expect(await notified(id)).toEqual(['Delete trig/x.txt', 'Copy trig/z.txt'])
    expect((await receivedAt(b, 'trig/x.txt'))[0]!.json.operation).toBe('Delete')
  })

  it('applies by inheritance: recursive reaches inside, disable_parent_folder_behavior cancels below', async () => {
    // Uploads here make their folders too: Create Folder is left out, to follow the uploads alone.
    const upload = { triggers: ['Upload'] }
    const parent = await hook('inh', { urls: [a.url], ...upload }, { recursive: true })
    const own = await hook(
      'inh/quiet',
      { urls: [b.url], ...upload },
      { disable_parent_folder_behavior: true },
    )
    const flat = await hook('inh', { urls: [b.url], ...upload })
    for (const p of ['inh/a.txt', 'inh/sub/b.txt', 'inh/quiet/c.txt', 'inh/quiet/deeper/d.txt'])
      await uploaded(s, p, 'x')
    expect(await notified(parent)).toEqual(['Upload inh/a.txt', 'Upload inh/sub/b.txt'])
    expect(await notified(flat)).toEqual(['Upload inh/a.txt'])
    expect(await notified(own)).toEqual(['Upload inh/quiet/c.txt'])
    await receivedAt(b, 'inh/quiet/c.txt')
  })

  it('sends XML, form-encoded (RAW) and GET requests with the behavior’s extra body fields', async () => {
    await hook('enc/xml', { urls: [a.url], encoding: 'XML', body: { partner: 'a&b' } })
    await hook('enc/raw', { urls: [a.url], encoding: 'RAW', body: { partner: 'acme' } })
    await hook('enc/get', { urls: [`${a.url}?fixed=1`], method: 'GET', body: { partner: 'acme' } })
    await uploaded(s, 'enc/xml/a.txt', 'x')
    await uploaded(s, 'enc/raw/a.txt', 'x')
    await uploaded(s, 'enc/get/a.txt', 'x')
    const [xml] = await receivedAt(a, 'enc/xml/a.txt')
    expect(xml!.method).toBe('POST')
    expect(xml!.headers['content-type']).toBe('application/xml')
    expect(xml!.body).toMatch(
      /^<\?xml version="1.0" encoding="UTF-8"\?><webhook><accountname>[^<]+<\/accountname><username><\/username><operation>Upload<\/operation><protocol>restapi<\/protocol><path>enc\/xml\/a.txt<\/path><sourcepath><\/sourcepath><attempt>1<\/attempt><partner>a&amp;b<\/partner><\/webhook>$/,
    )
    const [raw] = await receivedAt(a, 'enc/raw/a.txt')
    expect(raw!.headers['content-type']).toBe('application/x-www-form-urlencoded')
    const form = new URLSearchParams(raw!.body)
    expect([form.get('operation'), form.get('attempt'), form.get('partner')]).toEqual(['Upload', '1', 'acme'])
    const [get] = await receivedAt(a, 'enc/get/a.txt')
    expect(get!.method).toBe('GET')
    expect(get!.body).toBe('')
    const q = new URL(get!.url, 'http://x').searchParams
    expect([q.get('fixed'), q.get('operation'), q.get('partner')]).toEqual(['1', 'Upload', 'acme'])
    const [logged] = await vi.waitFor(async () => {
      const rows = (await attemptsOf('enc/get/a.txt')).filter((x) => x.behavior_id !== null)
      expect(rows.length).toBeGreaterThan(0)
      return rows
    }, WAIT)
    expect(logged!.request_method).toBe('GET')
    expect(logged!.request_url).toBe(`http://127.0.0.1:${new URL(a.url).port}${get!.url}`)
  })

  it('sends custom headers, never shows their values, and signs with the behavior’s token', async () => {
    const token = 'tok-behavior-9'
    const id = await hook('signed', {
      urls: [a.url],
      headers: { 'X-Api-Key': 'secret-9' },
      verification_token: token,
    })
    await uploaded(s, 'signed/a.txt', 'x')
    const [r] = await receivedAt(a, 'signed/a.txt')
    expect(r!.headers['x-api-key']).toBe('secret-9')
    expect(r!.headers['x-service-signature']).toBe(md5(token + r!.body))
    const key = Buffer.from(token, 'utf8')
    const signed = `${r!.headers['webhook-id']}.${r!.headers['webhook-timestamp']}.${r!.body}`
    expect(r!.headers['webhook-signature']).toBe(
      `v1,${crypto.createHmac('sha256', key).update(signed).digest('base64')}`,
    )
    const shown = await call(s, 'GET', `/behaviors/${id}`, { key: s.adminKey })
    expect(shown.body.value.headers).toEqual({ 'X-Api-Key': null })
    expect(shown.text).not.toContain('secret-9')
    expect(shown.text).not.toContain(token)
    const [log] = await vi.waitFor(async () => {
      const rows = await attemptsOf('signed/a.txt')
      expect(rows.filter((x) => x.behavior_id !== null)).toHaveLength(1)
      return rows.filter((x) => x.behavior_id !== null)
    }, WAIT)
    expect(JSON.parse(log!.request_headers)['X-Api-Key']).toBe('[hidden]')
    const exported = await readyExport(s, { query_behavior_id: String(id) }, { key: s.adminKey })
    const { rows, responses } = await walkResults(s, exported.id, { key: s.adminKey })
    expect(rows.map((x) => [x.behavior_id, x.path])).toEqual([[id, 'signed/a.txt']])
    expect(responses.map((x) => x.text).join('')).not.toContain('secret-9')
  })

  it('retries a failing behavior URL, logs each attempt, and the retry endpoint sends it again', async () => {
    const failing = await startListener(() => 500)
    try {
      const id = await hook('retrying', { urls: [failing.url] })
      await uploaded(s, 'retrying/a.txt', 'x')
      const log = await vi.waitFor(async () => {
        // The state first: once it is failed, every attempt's record is written.
        const n = await s.container.db
          .selectFrom('webhook_notifications')
          .select('state')
          .where('behavior_id', '=', id)
          .executeTakeFirstOrThrow()
        expect(n.state).toBe('failed')
        const rows = await attemptsOf('retrying/a.txt')
        return rows.filter((x) => x.behavior_id !== null)
      }, WAIT)
      expect(log.map((x) => [x.attempt, x.status, Number(x.behavior_id)])).toEqual([
        [1, 500, id],
        [2, 500, id],
      ])
      failing.answer(() => 200)
      const again = await call(s, 'POST', `/action_webhook_failures/${log[1]!.id}/retry`, { key: s.adminKey })
      expect(again.status, again.text).toBe(204)
      await vi.waitFor(async () => {
        const rows = (await attemptsOf('retrying/a.txt')).filter((x) => x.behavior_id !== null)
        expect(rows.map((x) => [x.attempt, x.success])).toEqual([
          [1, 0],
          [2, 0],
          [3, 1],
        ])
      }, WAIT)
      expect(failing.received.map((r) => r.json.attempt)).toEqual([1, 2, 3])
    } finally {
      await failing.close()
    }
  })

  it('drops a pending notification of a behavior deleted before it went out', async () => {
    // The first attempt is answered (500) only once the behavior is deleted, so its retry, due
    // 0.1 s later, always finds it gone however long the deletion took on a busy machine.
    let deletedNow = () => {}
    const deleted = new Promise<void>((resolve) => {
      deletedNow = resolve
    })
    const hanging = await startListener(async () => {
      await deleted
      return 500
    })
    try {
      const id = await hook('gone', { urls: [hanging.url] })
      await uploaded(s, 'gone/a.txt', 'x')
      await hanging.waitFor(1)
      expect((await call(s, 'DELETE', `/behaviors/${id}`, { key: s.adminKey })).status).toBe(204)
      deletedNow()
      await vi.waitFor(async () => {
        const n = await s.container.db
          .selectFrom('webhook_notifications')
          .select('state')
          .where('behavior_id', '=', id)
          .executeTakeFirstOrThrow()
        expect(n.state).toBe('dropped')
      }, WAIT)
      expect(hanging.received).toHaveLength(1)
    } finally {
      await hanging.close()
    }
  })

  it('filters export results by behavior; the site listener’s records have a null behavior_id', async () => {
    const id = await hook('exp', { urls: [a.url, b.url] })
    await uploaded(s, 'exp/a.txt', 'x')
    await vi.waitFor(async () => expect(await attemptsOf('exp/a.txt')).toHaveLength(3), WAIT)
    const mine = await readyExport(
      s,
      { query_behavior_id: `${id}`, query_path: 'exp/a.txt' },
      { key: s.adminKey },
    )
    expect(mine.query_behavior_id).toBe(`${id}`)
    const { rows } = await walkResults(s, mine.id, { key: s.adminKey })
    expect(rows.map((r) => [r.behavior_id, r.request_url]).sort()).toEqual(
      [
        [id, a.url],
        [id, b.url],
      ].sort(),
    )
    const all = await readyExport(s, { query_path: 'exp/a.txt' }, { key: s.adminKey })
    const every = (await walkResults(s, all.id, { key: s.adminKey })).rows
    expect(every.map((r) => r.behavior_id).sort()).toEqual([id, id, null].sort())
  })

  describe('POST /behaviors/webhook/test', () => {
    it('sends one request with the given settings and answers as the site listener’s test does', async () => {
      const r = await call(s, 'POST', '/behaviors/webhook/test', {
        key: s.adminKey,
        body: {
          url: b.url,
          encoding: 'RAW',
          headers: { 'X-Test': 'yes' },
          body: { tag: 't1' },
          action: 'destroy',
        },
      })
      expect(r.status, r.text).toBe(200)
      expect(r.body).toEqual({
        id: expect.any(Number),
        success: true,
        status: 200,
        message: 'OK',
        request_url: b.url,
        response_size: 0,
        response_body: '',
        duration_ms: expect.any(Number),
      })
      const got = b.received.find((x) => new URLSearchParams(x.body).get('tag') === 't1')!
      expect(got.headers['x-test']).toBe('yes')
      expect(new URLSearchParams(got.body).get('operation')).toBe('Delete')
      const log = await s.container.db
        .selectFrom('webhook_attempts')
        .selectAll()
        .where('id', '=', r.body.id)
        .executeTakeFirstOrThrow()
      expect([log.request_url, log.behavior_id, JSON.parse(log.request_headers)['X-Test']]).toEqual([
        b.url,
        null,
        '[hidden]',
      ])
    })

    it('reports a listener that cannot be reached, and refuses bad settings with exact errors', async () => {
      const unreachable = await call(s, 'POST', '/behaviors/webhook/test', {
        key: s.adminKey,
        body: { url: 'http://hooks.example/x' },
      })
      expect(unreachable.status, unreachable.text).toBe(200)
      expect([unreachable.body.success, unreachable.body.status]).toEqual([false, 7])
      // Its settings were not stored: it cannot be sent again.
      const retried = await call(s, 'POST', `/action_webhook_failures/${unreachable.body.id}/retry`, {
        key: s.adminKey,
      })
      expectError(retried, 422, 'processing-failure/model-save-error')
      expect(Object.keys(retried.body.model_errors)).toEqual(['id'])
      expectError(
        await call(s, 'POST', '/behaviors/webhook/test', { key: s.adminKey, body: {} }),
        400,
        'bad-request/request-params-required',
      )
      for (const [body, field] of [
        [{ url: 'http://10.1.2.3/x' }, 'url'],
        [{ url: 'ftp://x.example/' }, 'url'],
        [{ url: a.url, method: 'PUT' }, 'method'],
        [{ url: a.url, encoding: 'YAML' }, 'encoding'],
        [{ url: a.url, headers: { Host: 'x' } }, 'headers'],
        [{ url: a.url, action: 'explode' }, 'action'],
      ] as const) {
        const r = await call(s, 'POST', '/behaviors/webhook/test', { key: s.adminKey, body })
        expectError(r, 422, 'processing-failure/model-save-error')
        expect(Object.keys(r.body.model_errors)).toEqual([field])
      }
    })

    it('is for those who may manage behaviors: site and folder admins', async () => {
      const folderAdmin = await makeUser(s, { username: 'hook-folder-admin' })
      await grant(s, folderAdmin.id, 'fa', 'admin')
      const faKey = (await makeKey(s, folderAdmin.id)).key
      const plain = await makeUser(s, { username: 'hook-plain' })
      await grant(s, plain.id, 'fa', 'full')
      const plainKey = (await makeKey(s, plain.id)).key
      const ok = await call(s, 'POST', '/behaviors/webhook/test', { key: faKey, body: { url: a.url } })
      expect(ok.status, ok.text).toBe(200)
      expectError(
        await call(s, 'POST', '/behaviors/webhook/test', { key: plainKey, body: { url: a.url } }),
        403,
        'not-authorized/folder-admin-permission-required',
      )
      expectError(
        await call(s, 'POST', '/behaviors/webhook/test', { body: { url: a.url } }),
        401,
        'not-authenticated/authentication-required',
      )
    })
  })
})
