import crypto from 'node:crypto'
import { beforeAll, describe, expect, it } from 'vitest'
import { recordAction } from '../src/modules/actions/action-recorder.js'
import { RetryPolicy } from '../src/webhooks/retry-policy.js'
import { webhookOperationOf } from '../src/webhooks/webhook-outbox.js'
import { serviceSignature, signWebhook, standardSignature } from '../src/webhooks/webhook-signature.js'
import { call, dialects, useServer } from './helpers/server.js'

const file = [{ type: 'file' }]
const folder = [{ type: 'folder' }]

describe('webhook operations of Actions', () => {
  it.each([
    [{ action: 'create', path: 'a/b.txt', targets: file }, 'Upload'],
    [{ action: 'update', path: 'a/b.txt', targets: file }, 'Upload'],
    [{ action: 'create', path: 'a/b', targets: folder }, 'Create Folder'],
    [{ action: 'read', path: 'a/b.txt', targets: file }, 'Download'],
    [{ action: 'destroy', path: 'a', targets: folder }, 'Delete'],
    [{ action: 'copy', path: 'b/c.txt', source: 'a/c.txt', destination: 'b/c.txt', targets: file }, 'Copy'],
    [{ action: 'move', path: 'A/d.txt', source: 'a/c.txt', destination: 'A/d.txt', targets: file }, 'Rename'],
    [{ action: 'move', path: 'b/c.txt', source: 'a/c.txt', destination: 'b/c.txt', targets: file }, 'Move'],
    [{ action: 'move', path: 'c.txt', source: 'a/c.txt', destination: 'c.txt', targets: file }, 'Move'],
    [{ action: 'login', path: '' }, null],
    [{ action: 'update', path: '', targets: [{ type: 'webhook_settings' }] }, null],
    [{ action: 'api_key_create', path: '', targets: [{ type: 'api_key' }] }, null],
  ])('%o → %s', (facts, op) => {
    expect(webhookOperationOf(facts)).toBe(op)
  })
})

describe('webhook signatures', () => {
  it('matches the Standard Webhooks reference vector', () => {
    expect(
      standardSignature(
        'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        'msg_p5jXN8AQM9LWM0D4loKWxJek',
        1614265330,
        '{"test": 2432232314}',
      ),
    ).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=')
  })

  it('computes X-Service-Signature as the md5 of the token bytes, then the UTF-8 body bytes', () => {
    const token = '0123456789abcdef0123456789abcdef'
    const body = '{"path":"a/é ✓.txt"}'
    const expected = crypto.createHash('md5').update(token, 'utf8').update(body, 'utf8').digest('hex')
    expect(serviceSignature(token, body)).toBe(expected)
  })

  it('signs with a secret of its own after another, and again with the first', () => {
    const other = `whsec_${Buffer.alloc(24, 7).toString('base64')}`
    const reference = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE='
    const sign = (secret: string) =>
      standardSignature(secret, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}')
    expect(sign('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toBe(reference)
    const key = Buffer.alloc(24, 7)
    const mac = crypto
      .createHmac('sha256', key)
      .update('msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{"test": 2432232314}')
      .digest('base64')
    expect(sign(other)).toBe(`v1,${mac}`)
    expect(sign('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toBe(reference)
  })

  it('signs md5(token + body) and sends the fields in the spec order', () => {
    const signed = signWebhook(
      {
        accountname: 'acme',
        username: 'u',
        operation: 'Upload',
        protocol: 'web',
        path: 'p',
        sourcepath: '',
        attempt: 3,
      },
      'msg_1',
      {
        verificationToken: '0123456789abcdef0123456789abcdef',
        signingSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      },
      1_700_000_000_999,
    )
    expect(signed.body).toBe(
      '{"accountname":"acme","username":"u","operation":"Upload","protocol":"web","path":"p","sourcepath":"","attempt":3}',
    )
    expect(signed.headers['X-Service-Signature']).toBe(
      serviceSignature('0123456789abcdef0123456789abcdef', signed.body),
    )
    expect(signed.headers['X-Service-Signature']).toMatch(/^[0-9a-f]{32}$/)
    expect(signed.headers['webhook-timestamp']).toBe('1700000000')
    expect(signed.headers['webhook-id']).toBe('msg_1')
  })
})

describe('retry policy', () => {
  const schedule = [5, 300, 1800, 7200, 18000, 36000, 36000]

  it('allows 8 attempts by default and what an operator set otherwise', () => {
    const p = new RetryPolicy(schedule)
    expect(p.maxAttempts(0)).toBe(8)
    expect(p.maxAttempts(10)).toBe(10)
  })

  it('adds between 0 and 20% jitter to the scheduled delay', () => {
    expect(new RetryPolicy(schedule, () => 0).delayMs(1, null)).toBe(5000)
    expect(new RetryPolicy(schedule, () => 0.999999).delayMs(1, null)).toBe(6000)
    expect(new RetryPolicy(schedule, () => 0.5).delayMs(2, null)).toBe(330_000)
    expect(new RetryPolicy(schedule, () => 0).delayMs(7, null)).toBe(36_000_000)
    // A manual retry past the schedule waits as long as the last step.
    expect(new RetryPolicy(schedule, () => 0).delayMs(9, null)).toBe(36_000_000)
  })

  it('honours a longer Retry-After within the schedule’s bounds, jittered, and ignores a shorter one', () => {
    const p = new RetryPolicy(schedule, () => 0)
    expect(p.delayMs(1, 8)).toBe(8000)
    expect(p.delayMs(1, 3600)).toBe(3_600_000)
    // No longer than the schedule's longest delay (10 hours), jitter included.
    expect(p.delayMs(1, 86_400)).toBe(36_000_000)
    expect(new RetryPolicy(schedule, () => 0.999999).delayMs(1, 35_000)).toBe(36_000_000)
    expect(new RetryPolicy(schedule, () => 0.5).delayMs(1, 100)).toBe(110_000)
    // No shorter than the attempt's scheduled delay (with its jitter).
    expect(p.delayMs(1, 1)).toBe(5000)
    expect(new RetryPolicy(schedule, () => 0.5).delayMs(2, 60)).toBe(330_000)
  })
})

describe.each(dialects)('the outbox (%s)', (dialect) => {
  const s = useServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })
  beforeAll(async () => {
    const r = await call(s, 'PATCH', '/webhook_settings', {
      key: s.adminKey,
      // Nothing listens there: the dispatcher is stopped in these tests before anything is sent.
      body: { url: 'http://127.0.0.1:9/hook', triggers: ['Upload', 'Delete'], enabled: true },
    })
    expect(r.status, r.text).toBe(200)
    await s.container.webhooks.dispatcher.stop()
  })

  const ctx = () => ({
    siteId: s.container.site.id,
    userId: null,
    username: null,
    ip: null,
    interface: 'restapi',
  })
  const notifications = (path: string) =>
    s.container.db.selectFrom('webhook_notifications').selectAll().where('path', '=', path).execute()

  it('writes a notification with the Action and none when the transaction rolls back', async () => {
    await s.container.db.transaction().execute((trx) =>
      recordAction(trx, ctx(), {
        action: 'create',
        display: 'x',
        path: 'kept.txt',
        targets: [{ type: 'file' }],
      }),
    )
    await expect(
      s.container.db.transaction().execute(async (trx) => {
        await recordAction(trx, ctx(), {
          action: 'create',
          display: 'x',
          path: 'undone.txt',
          targets: [{ type: 'file' }],
        })
        throw new Error('the change failed')
      }),
    ).rejects.toThrow('the change failed')
    const kept = await notifications('kept.txt')
    expect(kept).toHaveLength(1)
    expect(kept[0]).toMatchObject({
      operation: 'Upload',
      state: 'pending',
      attempts: 0,
      sourcepath: '',
      folder: '',
    })
    expect(await notifications('undone.txt')).toHaveLength(0)
    const actions = await s.container.db
      .selectFrom('actions')
      .select('id')
      .where('path', '=', 'undone.txt')
      .execute()
    expect(actions).toHaveLength(0)
  })

  it('writes nothing for an operation that is not a trigger', async () => {
    await s.container.db.transaction().execute((trx) =>
      recordAction(trx, ctx(), {
        action: 'read',
        display: 'x',
        path: 'read.txt',
        targets: [{ type: 'file' }],
      }),
    )
    expect(await notifications('read.txt')).toHaveLength(0)
  })

  it('drops a pending notification whose trigger was deselected before it went out', async () => {
    await s.container.db.transaction().execute((trx) =>
      recordAction(trx, ctx(), {
        action: 'destroy',
        display: 'x',
        path: 'gone.txt',
        targets: [{ type: 'file' }],
      }),
    )
    const r = await call(s, 'PATCH', '/webhook_settings', { key: s.adminKey, body: { triggers: ['Upload'] } })
    expect(r.status, r.text).toBe(200)
    await s.container.webhooks.dispatcher.start()
    await expect
      .poll(async () => (await notifications('gone.txt'))[0]?.state, { timeout: 10_000 })
      .toBe('dropped')
    await s.container.webhooks.dispatcher.stop()
    const log = await s.container.db
      .selectFrom('webhook_attempts')
      .select('id')
      .where('path', '=', 'gone.txt')
      .execute()
    expect(log).toHaveLength(0)
  })

  it('deletes log records and finished notifications past the retention, and keeps the rest', async () => {
    const db = s.container.db
    const day = 86_400_000
    const now = Date.now()
    const mk = async (path: string, state: 'delivered' | 'pending', at: number) => {
      const n = await db
        .insertInto('webhook_notifications')
        .values({
          site_id: s.container.site.id,
          action_id: null,
          message_id: `msg_${path}`,
          operation: 'Upload',
          user_id: null,
          username: '',
          protocol: 'restapi',
          path,
          sourcepath: '',
          folder: '',
          state,
          max_attempts: 0,
          next_attempt_at: state === 'pending' ? now + day : null,
          lease_owner: null,
          lease_until: null,
          created_at: at,
          updated_at: at,
        })
        .returning('id')
        .executeTakeFirstOrThrow()
      await db
        .insertInto('webhook_attempts')
        .values({
          site_id: s.container.site.id,
          notification_id: n.id,
          attempt: 1,
          created_at: at,
          user_id: null,
          operation: 'Upload',
          status: 500,
          message: 'HTTP 500 Internal Server Error',
          success: 0,
          request_headers: '{}',
          request_method: 'POST',
          request_url: 'http://127.0.0.1:9/hook',
          request_body: '{}',
          path,
          folder: '',
          response_size: 0,
          response_body: '',
          duration_ms: 1,
        })
        .execute()
    }
    await mk('old-delivered', 'delivered', now - 91 * day)
    await mk('old-but-pending', 'pending', now - 91 * day)
    await mk('recent', 'delivered', now - 89 * day)
    expect(await s.container.webhooks.retention.runOnce()).toBe(3)
    const left = await db
      .selectFrom('webhook_notifications')
      .select(['path'])
      .where('path', 'in', ['old-delivered', 'old-but-pending', 'recent'])
      .execute()
    expect(left.map((r) => r.path).sort()).toEqual(['old-but-pending', 'recent'])
    const logs = await db
      .selectFrom('webhook_attempts')
      .select('path')
      .where('path', 'in', ['old-delivered', 'old-but-pending', 'recent'])
      .execute()
    expect(logs.map((r) => r.path)).toEqual(['recent'])
  })
})
