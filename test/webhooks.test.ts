import crypto from 'node:crypto'
import net from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { download, req, target, uploaded } from './helpers/files.js'
import { type Received, startListener, type TestListener } from './helpers/listener.js'
import {
  call,
  dialects,
  expectError,
  makeKey,
  makeUser,
  type TestServer,
  useServer,
} from './helpers/server.js'

const ALL = ['Upload', 'Download', 'Delete', 'Create Folder', 'Rename', 'Move', 'Copy']

/** Points the site's listener at `url` with the given triggers, through the API. */
async function configure(s: TestServer, url: string | null, triggers = ALL, enabled = true) {
  const r = await call(s, 'PATCH', '/webhook_settings', { key: s.adminKey, body: { url, triggers, enabled } })
  expect(r.status, r.text).toBe(200)
  return r.body as { verification_token: string; signing_secret: string }
}

async function attempts(s: TestServer) {
  return s.container.db.selectFrom('webhook_attempts').selectAll().orderBy('id').execute()
}

async function attemptsOf(s: TestServer, path: string) {
  return s.container.db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('path', '=', path)
    .orderBy('id')
    .execute()
}

/** How long and how often to poll for what the dispatcher does after a request returns. */
const WAIT = { timeout: 10_000, interval: 20 }

/** A port on 127.0.0.1 that nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const srv = net.createServer()
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  const { port } = srv.address() as net.AddressInfo
  await new Promise<void>((r) => srv.close(() => r()))
  return port
}

function standardSignature(secret: string, r: Received): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64')
  const signed = `${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body}`
  return `v1,${crypto.createHmac('sha256', key).update(signed).digest('base64')}`
}

describe.each(dialects)('webhook delivery (%s)', (dialect) => {
  let listener: TestListener
  /** The server's clock stands still while set: a retry is then due only once it moves on. */
  let frozen: number | null = null

  const s = useServer(
    dialect,
    {
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
      WEBHOOK_RETRY_SCHEDULE: '0.1,0.1,0.1',
      // Long enough for a first request on a loaded machine; the timeout test waits it out once.
      WEBHOOK_TIMEOUT_MS: '2000',
    },
    // Listeners here are addressed by IP; a host name stands for one outside the allowed range.
    { resolver: async () => [{ address: '127.0.0.2', family: 4 }], now: () => frozen ?? Date.now() },
  )
  afterEach(async () => {
    frozen = null
    await listener?.close()
    await configure(s, null, [], false)
  })

  it('sends an upload with exactly the spec payload, both signatures and the log record', async () => {
    listener = await startListener()
    const keys = await configure(s, listener.url, ['Upload'])
    await uploaded(s, 'hooks/report.csv', 'a,b\n1,2\n')
    const [r] = await listener.waitFor(1)
    expect(r!.method).toBe('POST')
    expect(r!.body).toBe(
      JSON.stringify({
        accountname: 'wharf',
        username: '',
        operation: 'Upload',
        protocol: 'restapi',
        path: 'hooks/report.csv',
        sourcepath: '',
        attempt: 1,
      }),
    )
    expect(r!.headers['content-type']).toBe('application/json')
    expect(r!.headers['user-agent']).toBe('Wharf-Webhook')
    const md5 = crypto
      .createHash('md5')
      .update(keys.verification_token + r!.body)
      .digest('hex')
    expect(r!.headers['x-service-signature']).toBe(md5)
    expect(r!.headers['webhook-id']).toMatch(/^msg_/)
    expect(Math.abs(Number(r!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60)
    expect(r!.headers['webhook-signature']).toBe(standardSignature(keys.signing_secret, r!))

    const [log] = await vi.waitFor(async () => {
      const a = await attemptsOf(s, 'hooks/report.csv')
      expect(a).toHaveLength(1)
      return a
    }, WAIT)
    expect(log).toMatchObject({
      attempt: 1,
      status: 200,
      success: 1,
      request_method: 'POST',
      request_url: listener.url,
      path: 'hooks/report.csv',
      folder: 'hooks',
      operation: 'Upload',
      request_body: r!.body,
    })
    const sent = JSON.parse(log!.request_headers)
    expect(sent['X-Service-Signature']).toBe(md5)
    expect(sent['webhook-id']).toBe(r!.headers['webhook-id'])
  })

  it('names the user and reports each file operation with its paths', async () => {
    listener = await startListener()
    await configure(s, listener.url)
    const user = await makeUser(s, { site_admin: true })
    const key = (await makeKey(s, user.id)).key
    const t = target(s, key)
    expect((await req(t, 'POST', '/folders/ops')).status).toBe(201)
    await uploaded(s, 'ops/a.txt', 'hello', key)
    expect((await req(t, 'POST', '/file_actions/move/ops/a.txt', { destination: 'ops/b.txt' })).status).toBe(
      201,
    )
    expect((await req(t, 'POST', '/folders/ops/sub')).status).toBe(201)
    expect(
      (await req(t, 'POST', '/file_actions/move/ops/b.txt', { destination: 'ops/sub/b.txt' })).status,
    ).toBe(201)
    expect(
      (await req(t, 'POST', '/file_actions/copy/ops/sub/b.txt', { destination: 'ops/c.txt' })).status,
    ).toBe(201)
    expect((await download(t, 'ops/c.txt')).toString()).toBe('hello')
    expect((await req(t, 'DELETE', '/files/ops/c.txt')).status).toBe(204)
    const got = await listener.waitFor(8)
    // Notifications go out concurrently: their order of arrival is not guaranteed.
    const byId = (a: Received, b: Received) =>
      a.json.path.localeCompare(b.json.path) || a.json.operation.localeCompare(b.json.operation)
    const seen = got
      .sort(byId)
      .map((r) => [r.json.operation, r.json.path, r.json.sourcepath, r.json.username])
    const expected = [
      ['Create Folder', 'ops', '', user.username],
      ['Upload', 'ops/a.txt', '', user.username],
      ['Rename', 'ops/b.txt', 'ops/a.txt', user.username],
      ['Create Folder', 'ops/sub', '', user.username],
      ['Move', 'ops/sub/b.txt', 'ops/b.txt', user.username],
      ['Copy', 'ops/c.txt', 'ops/sub/b.txt', user.username],
      ['Download', 'ops/c.txt', '', user.username],
      ['Delete', 'ops/c.txt', '', user.username],
    ]
    expect(seen).toEqual(expected.sort((a, b) => a[1]!.localeCompare(b[1]!) || a[0]!.localeCompare(b[0]!)))
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(8)
  })

  it('sends nothing for operations that are not selected, or when disabled', async () => {
    listener = await startListener()
    await configure(s, listener.url, ['Delete'])
    await uploaded(s, 'quiet/a.txt', 'x')
    expect((await req(target(s), 'DELETE', '/files/quiet/a.txt')).status).toBe(204)
    // Disabling also drops what has not gone out yet: let the Delete arrive first.
    await listener.waitFor(1)
    await configure(s, listener.url, ALL, false)
    await uploaded(s, 'quiet/b.txt', 'x')
    await configure(s, listener.url, ['Upload'])
    await uploaded(s, 'quiet/c.txt', 'x')
    const got = await listener.waitFor(2)
    expect(got.map((r) => [r.json.operation, r.json.path])).toEqual([
      ['Delete', 'quiet/a.txt'],
      ['Upload', 'quiet/c.txt'],
    ])
  })

  it('retries a 500 with the same webhook-id and counts the attempt', async () => {
    listener = await startListener((_r, n) => (n === 0 ? 500 : 204))
    const keys = await configure(s, listener.url, ['Upload'])
    await uploaded(s, 'retry/a.txt', 'x')
    const [first, second] = await listener.waitFor(2)
    expect(first!.json.attempt).toBe(1)
    expect(second!.json.attempt).toBe(2)
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id'])
    expect(second!.headers['webhook-signature']).toBe(standardSignature(keys.signing_secret, second!))
    const log = await vi.waitFor(async () => {
      const a = await attemptsOf(s, 'retry/a.txt')
      expect(a).toHaveLength(2)
      return a
    }, WAIT)
    expect(log.map((a) => [a.attempt, a.status, a.success])).toEqual([
      [1, 500, 0],
      [2, 204, 1],
    ])
  })

  it.each([201, 202, 302])('counts %i as a failure and never follows a redirect', async (status) => {
    const elsewhere = await startListener()
    listener = await startListener((_r, n) =>
      n === 0 ? { status, headers: { Location: elsewhere.url } } : 200,
    )
    await configure(s, listener.url, ['Upload'])
    await uploaded(s, `status/${status}.txt`, 'x')
    await listener.waitFor(2)
    const log = await vi.waitFor(async () => {
      const a = await attemptsOf(s, `status/${status}.txt`)
      expect(a).toHaveLength(2)
      return a
    }, WAIT)
    expect(log.map((a) => [a.status, a.success])).toEqual([
      [status, 0],
      [200, 1],
    ])
    expect(elsewhere.received).toHaveLength(0)
    await elsewhere.close()
  })

  it('gives up after the last scheduled attempt', async () => {
    listener = await startListener(() => 503)
    await configure(s, listener.url, ['Upload'])
    await uploaded(s, 'dead/a.txt', 'x')
    await listener.waitFor(4)
    const n = await vi.waitFor(async () => {
      const r = await s.container.db
        .selectFrom('webhook_notifications')
        .selectAll()
        .where('path', '=', 'dead/a.txt')
        .executeTakeFirstOrThrow()
      expect(r.state).toBe('failed')
      return r
    }, WAIT)
    expect(n.attempts).toBe(4)
    expect(listener.received.map((r) => r.json.attempt)).toEqual([1, 2, 3, 4])
  })

  it('records a timeout (28), a refused connection (7) and a refused address (7)', async () => {
    listener = await startListener(() => 'hang')
    await configure(s, listener.url, ['Upload'])
    await uploaded(s, 'net/hang.txt', 'x')
    await vi.waitFor(
      async () => expect((await attempts(s)).map((x) => x.path)).toContain('net/hang.txt'),
      WAIT,
    )
    await configure(s, `http://127.0.0.1:${await closedPort()}/hook`, ['Upload'])
    await uploaded(s, 'net/refused.txt', 'x')
    // A literal 127.0.0.2 is refused when saved; a name that resolves to it only when sending.
    const outside = await startListener(() => 200, '127.0.0.2')
    await configure(s, outside.url.replace('127.0.0.2', 'outside.test'), ['Upload'])
    await uploaded(s, 'net/private.txt', 'x')
    const log = await vi.waitFor(async () => {
      const a = await attempts(s)
      expect(a.map((x) => x.path)).toEqual(
        expect.arrayContaining(['net/hang.txt', 'net/refused.txt', 'net/private.txt']),
      )
      return a
    }, WAIT)
    const first = (p: string) => log.find((a) => a.path === p)!
    expect([first('net/hang.txt').status, first('net/hang.txt').success]).toEqual([28, 0])
    expect(first('net/refused.txt').status).toBe(7)
    expect(first('net/private.txt').status).toBe(7)
    expect(first('net/private.txt').message).toMatch(/not allowed/)
    expect(outside.received).toHaveLength(0)
    await outside.close()
  })

  it('waits as Retry-After asks, up to the schedule’s longest delay', async () => {
    // Earlier tests' retries may still arrive here: only this test's first request is refused.
    let refused = false
    listener = await startListener((r) => {
      if (refused || r.json?.path !== 'later/a.txt') return 200
      refused = true
      return { status: 429, headers: { 'Retry-After': '30' } }
    })
    await configure(s, listener.url, ['Upload'])
    // Until the clock moves on, the retry is not due: the refused attempt is seen alone, however
    // slowly this machine runs.
    const at = Date.now()
    frozen = at
    await uploaded(s, 'later/a.txt', 'x')
    const n = await vi.waitFor(async () => {
      const r = await s.container.db
        .selectFrom('webhook_notifications')
        .selectAll()
        .where('path', '=', 'later/a.txt')
        .executeTakeFirstOrThrow()
      expect(r.attempts).toBe(1)
      expect(r.next_attempt_at).not.toBeNull()
      return r
    }, WAIT)
    // Scheduled 0.1 s, the schedule's longest too: Retry-After 30 s is honoured up to 0.1 s.
    expect([n.updated_at, n.next_attempt_at]).toEqual([at, at + 100])
    expect(listener.received.filter((r) => r.json?.path === 'later/a.txt')).toHaveLength(1)
    frozen = at + 100
    s.container.webhooks.dispatcher.kick()
    await vi.waitFor(async () => {
      const a = await attemptsOf(s, 'later/a.txt')
      expect(a).toHaveLength(2)
      return a
    }, WAIT)
  })
})

describe.each(dialects)(
  'POST /action_webhook_failures/{id}/retry and /webhook_settings/test (%s)',
  (dialect) => {
    let listener: TestListener

    const s = useServer(
      dialect,
      { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_RETRY_SCHEDULE: '' },
      { resolver: async () => [{ address: '127.0.0.2', family: 4 }] },
    )
    beforeAll(async () => {
      listener = await startListener((_r, n) => (n === 0 ? 500 : 200))
    })
    afterAll(async () => {
      await listener.close()
    })

    it('sends a failed notification again now as attempt n+1, and refuses what cannot be retried', async () => {
      await configure(s, listener.url, ['Upload'])
      await uploaded(s, 'again/a.txt', 'x')
      const [first] = await listener.waitFor(1)
      const [failed] = await vi.waitFor(async () => {
        const a = await attemptsOf(s, 'again/a.txt')
        expect(a).toHaveLength(1)
        return a
      }, WAIT)
      expect(failed!.success).toBe(0)

      const plain = await makeUser(s)
      const plainKey = (await makeKey(s, plain.id)).key
      expectError(
        await call(s, 'POST', `/action_webhook_failures/${failed!.id}/retry`, { key: plainKey }),
        403,
        'not-authorized/site-admin-required',
      )
      expectError(
        await call(s, 'POST', `/action_webhook_failures/${failed!.id}/retry`),
        401,
        'not-authenticated/authentication-required',
      )

      const r = await call(s, 'POST', `/action_webhook_failures/${failed!.id}/retry`, { key: s.adminKey })
      expect(r.status).toBe(204)
      expect(r.text).toBe('')
      const [, second] = await listener.waitFor(2)
      expect(second!.json.attempt).toBe(2)
      expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id'])
      const log = await vi.waitFor(async () => {
        const a = await attemptsOf(s, 'again/a.txt')
        expect(a).toHaveLength(2)
        return a
      }, WAIT)
      expectError(
        await call(s, 'POST', `/action_webhook_failures/${log[1]!.id}/retry`, { key: s.adminKey }),
        404,
        'not-found',
      )
      // The failed attempt's notification has since been delivered: asking again sends nothing.
      const again = await call(s, 'POST', `/action_webhook_failures/${failed!.id}/retry`, { key: s.adminKey })
      expectError(again, 422, 'processing-failure/model-save-error')
      expect(again.body.error).toBe(
        `Id ${failed!.id} is a failed attempt of a notification that log record ${log[1]!.id} has since delivered: it is not sent again`,
      )
      expect(Object.keys(again.body.model_errors)).toEqual(['id'])
      const state = await s.container.db
        .selectFrom('webhook_notifications')
        .select(['state', 'attempts'])
        .where('id', '=', failed!.notification_id)
        .executeTakeFirstOrThrow()
      expect(state).toEqual({ state: 'delivered', attempts: 2 })
      expectError(
        await call(s, 'POST', '/action_webhook_failures/999999/retry', { key: s.adminKey }),
        404,
        'not-found',
      )
      expectError(
        await call(s, 'POST', '/action_webhook_failures/abc/retry', { key: s.adminKey }),
        400,
        'bad-request/request-params-invalid',
      )
    })

    it('sends a test notification and answers with the listener result', async () => {
      listener.answer(() => ({ status: 200, body: 'thanks' }))
      await configure(s, listener.url, [], false)
      const before = listener.received.length
      const r = await call(s, 'POST', '/webhook_settings/test', { key: s.adminKey })
      expect(r.status, r.text).toBe(200)
      expect(r.body).toMatchObject({
        success: true,
        status: 200,
        response_body: 'thanks',
        response_size: 6,
        request_url: listener.url,
      })
      expect(listener.received[before]!.json).toMatchObject({ operation: 'Test', attempt: 1, path: '' })

      await configure(s, null, [], false)
      expectError(
        await call(s, 'POST', '/webhook_settings/test', { key: s.adminKey }),
        400,
        'bad-request/request-params-required',
      )
    })

    it('says in words where a test to a failing listener went wrong, in the answer and in the log', async () => {
      const port = await closedPort()
      const refused = `http://127.0.0.1:${port}/hook`
      const outside = 'http://outside.test:9/hook'
      const expected = [
        [refused, `Connection refused by 127.0.0.1:${port}`],
        [
          outside,
          'Address 127.0.0.2 (loopback) is not allowed: webhooks go only to public addresses and those in WEBHOOK_ALLOWED_CIDRS',
        ],
      ]
      for (const [url, message] of expected) {
        await configure(s, url!, [], false)
        const r = await call(s, 'POST', '/webhook_settings/test', { key: s.adminKey })
        expect(r.status, r.text).toBe(200)
        expect(r.body).toMatchObject({ success: false, status: 7, message, request_url: url })
        const row = await s.container.db
          .selectFrom('webhook_attempts')
          .select(['status', 'message'])
          .where('id', '=', r.body.id)
          .executeTakeFirstOrThrow()
        expect(row).toEqual({ status: 7, message })
      }
      await configure(s, null, [], false)
    })
  },
)
