import { afterEach, describe, expect, it } from 'vitest'
import type { Resolver } from '../src/webhooks/address-guard.js'
import {
  parseRetryAfter,
  RESPONSE_BODY_COUNTED,
  RESPONSE_BODY_KEPT,
  type SenderOptions,
  WebhookSender,
} from '../src/webhooks/webhook-sender.js'
import { closeLoopbackServers, httpServer, type WireRequest } from './helpers/loopback-servers.js'

/** HTTP outcomes of webhook deliveries; network failures and the address guard are in webhook-sender-network.test.ts. */

const senders: WebhookSender[] = []
function sender(opts: Partial<SenderOptions> = {}): WebhookSender {
  const s = new WebhookSender({
    allowedCidrs: ['127.0.0.1/32'],
    connectTimeoutMs: 500,
    totalTimeoutMs: 2000,
    ...opts,
  })
  senders.push(s)
  return s
}

afterEach(async () => {
  await Promise.all(senders.splice(0).map((s) => s.close()))
  await closeLoopbackServers()
})

const headers = {
  'Content-Type': 'application/json',
  'User-Agent': 'Wharf-Webhook',
  'X-Service-Signature': '0123456789abcdef0123456789abcdef',
  'webhook-id': 'msg_2b7f',
}
const body = '{"action":"Upload","path":"a/é ✓.txt","sourcepath":""}'

function answer(status: number, replyHeaders: Record<string, string> = {}, replyBody: string | Buffer = '') {
  return (_req: WireRequest, res: import('node:http').ServerResponse) => {
    res.writeHead(status, replyHeaders)
    res.end(replyBody)
  }
}

describe('WebhookSender: HTTP outcomes', () => {
  it('posts exactly the given headers and body, and counts a 200 as a success', async () => {
    // The listener takes 1.234 s on the sender's clock to answer.
    let clock = Date.parse('2025-03-01T12:00:00Z')
    const thanks = answer(200, { 'content-type': 'text/plain' }, 'thanks ✓')
    const listener = await httpServer((req, res) => {
      clock += 1234
      thanks(req, res)
    })
    const out = await sender({ now: () => clock }).send({
      url: `${listener.origin}/hooks/in?x=1`,
      headers,
      body,
    })

    expect(out).toMatchObject({
      success: true,
      status: 200,
      message: 'OK',
      network: false,
      responseBody: 'thanks ✓',
      responseSize: Buffer.byteLength('thanks ✓'),
      retryAfterSeconds: null,
    })
    expect(out.durationMs).toBe(1234)
    expect(listener.requests).toHaveLength(1)
    const req = listener.requests[0]!
    expect(req.method).toBe('POST')
    expect(req.url).toBe('/hooks/in?x=1')
    expect(req.body.equals(Buffer.from(body, 'utf8'))).toBe(true)
    // Only what HTTP/1.1 itself needs is added to the caller's headers, whose names keep their case.
    const added = ['host', 'content-length', 'connection']
    expect(req.headers.filter(([name]) => !added.includes(name.toLowerCase()))).toEqual(
      Object.entries(headers),
    )
    const wire = Object.fromEntries(req.headers.map(([n, v]) => [n.toLowerCase(), v]))
    expect(wire['host']).toBe(`127.0.0.1:${listener.port}`)
    expect(wire['content-length']).toBe(String(Buffer.byteLength(body)))
    expect(wire['connection']).toBe('keep-alive')
  })

  it('counts a 204 as a success', async () => {
    const listener = await httpServer(answer(204))
    const out = await sender().send({ url: listener.origin, headers, body })
    expect(out).toMatchObject({
      success: true,
      status: 204,
      message: 'No Content',
      network: false,
      responseSize: 0,
    })
    expect(out.responseBody).toBe('')
  })

  it.each([
    [201, 'HTTP 201 Created'],
    [202, 'HTTP 202 Accepted'],
    [404, 'HTTP 404 Not Found'],
    [500, 'HTTP 500 Internal Server Error'],
    [599, 'HTTP 599'],
  ])('counts a %i as a failure', async (status, message) => {
    const listener = await httpServer(answer(status, {}, 'nope'))
    const out = await sender().send({ url: listener.origin, headers, body })
    expect(out).toMatchObject({ success: false, status, message, network: false, responseBody: 'nope' })
    expect(listener.requests).toHaveLength(1)
  })

  it('does not follow a redirect, which is a failure with its status', async () => {
    const elsewhere = await httpServer(answer(200))
    const listener = await httpServer(answer(302, { location: `${elsewhere.origin}/moved` }))
    const out = await sender().send({ url: listener.origin, headers, body })
    expect(out).toMatchObject({ success: false, status: 302, message: 'HTTP 302 Found', network: false })
    expect(listener.requests).toHaveLength(1)
    expect(elsewhere.connections).toBe(0)
  })

  it('reads Retry-After as seconds on a 429', async () => {
    const listener = await httpServer(answer(429, { 'retry-after': '120' }))
    const out = await sender().send({ url: listener.origin, headers, body })
    expect(out).toMatchObject({ success: false, status: 429, retryAfterSeconds: 120 })
  })

  it('reads Retry-After as an HTTP-date on a 503, against the injected clock', async () => {
    const now = Date.parse('2025-03-01T12:00:00Z')
    const listener = await httpServer(answer(503, { 'retry-after': 'Sat, 01 Mar 2025 12:05:00 GMT' }))
    const out = await sender({ now: () => now }).send({ url: listener.origin, headers, body })
    expect(out).toMatchObject({ success: false, status: 503, retryAfterSeconds: 300, durationMs: 0 })
  })

  it('has no Retry-After when the header is absent, or on a status that does not carry one', async () => {
    const bare = await httpServer(answer(429))
    const other = await httpServer(answer(500, { 'retry-after': '30' }))
    const s = sender()
    expect((await s.send({ url: bare.origin, headers, body })).retryAfterSeconds).toBeNull()
    expect((await s.send({ url: other.origin, headers, body })).retryAfterSeconds).toBeNull()
  })

  it('reuses one kept-alive connection for consecutive deliveries to a listener', async () => {
    const listener = await httpServer(answer(200))
    const s = sender()
    for (let i = 0; i < 3; i++) {
      expect((await s.send({ url: listener.origin, headers, body })).success).toBe(true)
      // undici marks a connection free on the next tick; a send in the same tick would open another one.
      await new Promise((resolve) => setImmediate(resolve))
    }
    expect(listener.requests).toHaveLength(3)
    expect(listener.connections).toBe(1)
  })

  it('keeps the first 64 KiB of a large body and reports its size', async () => {
    const big = Buffer.alloc(2 * 1024 * 1024, 'a')
    const listener = await httpServer(answer(500, { 'content-length': String(big.length) }, big))
    const out = await sender().send({ url: listener.origin, headers, body })
    expect(out).toMatchObject({ success: false, status: 500, network: false, responseSize: big.length })
    expect(out.responseBody).toBe('a'.repeat(RESPONSE_BODY_KEPT))
  })

  it('stops reading an endless body after 1 MiB and closes the connection', async () => {
    let closed = false
    const listener = await httpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' }) // chunked, no Content-Length
      const chunk = Buffer.alloc(16 * 1024, 'b')
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
      }
      res.on('drain', pump)
      res.on('close', () => {
        closed = true
      })
      pump()
    })
    const out = await sender().send({ url: listener.origin, headers, body })
    expect(out).toMatchObject({ success: true, status: 200, network: false })
    expect(out.responseSize).toBeGreaterThanOrEqual(RESPONSE_BODY_COUNTED)
    expect(out.responseSize).toBeLessThan(RESPONSE_BODY_COUNTED + 1024 * 1024)
    expect(out.responseBody).toBe('b'.repeat(RESPONSE_BODY_KEPT))
    await expect.poll(() => closed, { timeout: 1000 }).toBe(true)
  })

  it('sends the Host of the URL while connecting to the address the resolver vetted', async () => {
    const listener = await httpServer(answer(200))
    const asked: string[] = []
    const resolver: Resolver = async (hostname) => {
      asked.push(hostname)
      return [{ address: '127.0.0.1', family: 4 }]
    }
    const out = await sender({ resolver }).send({
      url: `http://hooks.example.test:${listener.port}/in`,
      headers,
      body,
    })
    expect(out).toMatchObject({ success: true, status: 200 })
    expect(asked).toEqual(['hooks.example.test'])
    const host = listener.requests[0]!.headers.find(([n]) => n.toLowerCase() === 'host')
    expect(host).toEqual(['host', `hooks.example.test:${listener.port}`])
  })
})

describe('parseRetryAfter', () => {
  const now = Date.parse('2025-03-01T12:00:00Z')
  it.each([
    ['0', 0],
    [' 45 ', 45],
    ['Sat, 01 Mar 2025 12:00:30 GMT', 30],
    ['Saturday, 01-Mar-25 12:01:00 GMT', 60],
    ['Sat, 01 Mar 2025 11:00:00 GMT', 0],
  ])('reads %j as %i seconds', (value, seconds) => {
    expect(parseRetryAfter(value, now)).toBe(seconds)
  })

  it.each([undefined, '', '-5', '1.5', 'soon', '2025-03-01T12:05:00Z', 'Sat, 99 Foo'])(
    'ignores %j',
    (value) => {
      expect(parseRetryAfter(value, now)).toBeNull()
    },
  )

  it('takes the first of repeated headers', () => {
    expect(parseRetryAfter(['7', '9'], now)).toBe(7)
  })
})
