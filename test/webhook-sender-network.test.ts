import { once } from 'node:events'
import net from 'node:net'
import { Worker } from 'node:worker_threads'
import { afterEach, describe, expect, it } from 'vitest'
import type { Resolver } from '../src/webhooks/address-guard.js'
import { type SenderOptions, WebhookSender } from '../src/webhooks/webhook-sender.js'
import { closedPort, closeLoopbackServers, httpServer, tcpServer } from './helpers/loopback-servers.js'

/** Network failures (curl-style codes) and the address guard, against real loopback sockets only. */

const senders: WebhookSender[] = []
const cleanups: (() => Promise<void> | void)[] = []
function sender(opts: Partial<SenderOptions> = {}): WebhookSender {
  const s = new WebhookSender({
    allowedCidrs: ['127.0.0.1/32'],
    connectTimeoutMs: 300,
    totalTimeoutMs: 1000,
    ...opts,
  })
  senders.push(s)
  return s
}

afterEach(async () => {
  await Promise.all(senders.splice(0).map((s) => s.close()))
  for (const c of cleanups.splice(0)) await c()
  await closeLoopbackServers()
})

const req = { headers: { 'content-type': 'application/json' }, body: '{"action":"Upload"}' }
const ok = () =>
  httpServer((_r, res) => {
    res.writeHead(200)
    res.end('ok')
  })
const resolveTo =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses.map((address) => ({ address, family: net.isIP(address) === 6 ? 6 : 4 }))

/**
 * A listener on 127.0.0.1 whose thread never accepts: once its backlog is full the kernel drops
 * further SYNs, so a new connection hangs in the TCP handshake until the connect timeout.
 */
async function unacceptingPort(): Promise<number> {
  const flag = new Int32Array(new SharedArrayBuffer(4))
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads')
     const server = require('node:net').createServer()
     server.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
       parentPort.postMessage(server.address().port)
       Atomics.wait(workerData, 0, 0)
     })`,
    { eval: true, workerData: flag },
  )
  const [port] = (await once(worker, 'message')) as [number]
  const fillers: net.Socket[] = []
  cleanups.push(async () => {
    for (const f of fillers) f.destroy()
    Atomics.store(flag, 0, 1)
    Atomics.notify(flag, 0)
    await worker.terminate()
  })
  // Fill the accept queue: stop at the first connection the kernel no longer completes.
  for (let i = 0; i < 8; i++) {
    const filler = net.connect(port, '127.0.0.1').on('error', () => {})
    fillers.push(filler)
    const connected = await Promise.race([
      once(filler, 'connect').then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 150)),
    ])
    if (!connected) return port
  }
  throw new Error('the backlog never filled up')
}

describe('WebhookSender: timeouts', () => {
  it('gives up on a listener that accepts and never answers (28)', async () => {
    const hanging = await tcpServer(() => {})
    const out = await sender({ totalTimeoutMs: 300 }).send({ url: hanging.origin, ...req })
    expect(out).toMatchObject({
      success: false,
      status: 28,
      message: 'Timed out after 300 ms',
      network: true,
    })
    // The listener's accept runs on this busy event loop too: it may come after the give-up.
    await expect.poll(() => hanging.connections).toBe(1)
  })

  it('gives up on a body that stops coming, keeping what arrived (28)', async () => {
    const stalls = await httpServer((_r, res) => {
      res.writeHead(200, { 'content-length': '100' })
      res.write('first part')
    })
    const out = await sender({ totalTimeoutMs: 300 }).send({ url: stalls.origin, ...req })
    expect(out).toMatchObject({
      success: false,
      status: 28,
      network: true,
      responseBody: 'first part',
      responseSize: 10,
    })
  })

  // undici checks its connect timers about once a second, hence the roomy total timeout here.
  it('times out a TCP connect that never completes (28)', async () => {
    const port = await unacceptingPort()
    const out = await sender({ connectTimeoutMs: 200, totalTimeoutMs: 3000 }).send({
      url: `http://127.0.0.1:${port}/`,
      ...req,
    })
    expect(out).toMatchObject({
      success: false,
      status: 28,
      message: 'Connect timed out after 200 ms',
      network: true,
    })
  })

  it('counts name resolution within the connect timeout (28)', async () => {
    const never: Resolver = () => new Promise(() => {})
    const out = await sender({ connectTimeoutMs: 100, totalTimeoutMs: 3000, resolver: never }).send({
      url: 'http://slow.example.test/',
      ...req,
    })
    expect(out).toMatchObject({
      success: false,
      status: 28,
      message: 'Connect timed out after 100 ms',
      network: true,
    })
  })
})

describe('WebhookSender: connection failures', () => {
  it('reports a refused connection (7)', async () => {
    const port = await closedPort()
    const out = await sender().send({ url: `http://127.0.0.1:${port}/`, ...req })
    expect(out).toMatchObject({
      success: false,
      status: 7,
      message: `Connection refused by 127.0.0.1:${port}`,
      network: true,
    })
  })

  it('reports a name that does not resolve (6)', async () => {
    const resolver: Resolver = async (hostname) => {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' })
    }
    const out = await sender({ resolver }).send({ url: 'http://listener.invalid/hook', ...req })
    expect(out).toMatchObject({
      success: false,
      status: 6,
      message: 'Could not resolve host listener.invalid (ENOTFOUND)',
    })
    const none = await sender({ resolver: resolveTo() }).send({ url: 'http://listener.invalid/hook', ...req })
    expect(none).toMatchObject({
      status: 6,
      message: 'Could not resolve host listener.invalid (no address)',
      network: true,
    })
  })

  it.each([
    ['ftp://127.0.0.1/hook', 'Protocol ftp: is not allowed'],
    ['file:///etc/passwd', 'Protocol file: is not allowed'],
    ['not a url', 'Invalid URL'],
  ])('refuses %s without contacting anything (7)', async (url, message) => {
    expect(await sender().send({ url, ...req })).toMatchObject({
      success: false,
      status: 7,
      message,
      network: true,
    })
  })

  it('reports an https URL on a plain HTTP listener as a TLS failure (35)', async () => {
    const plain = await ok()
    const out = await sender().send({ url: `https://127.0.0.1:${plain.port}/`, ...req })
    expect(out).toMatchObject({ success: false, status: 35, network: true })
    expect(out.message).toBe('TLS handshake failed: wrong version number')
    expect(plain.requests).toHaveLength(0)
  })

  it.each([
    ['closed as it is accepted', (s: net.Socket) => s.destroy(), 'Empty reply from server'],
    [
      'reset once the request is read',
      (s: net.Socket) => s.once('data', () => s.resetAndDestroy()),
      'Empty reply from server (connection reset)',
    ],
  ])('reports a connection %s as an empty reply (52)', async (_how, misbehave, message) => {
    const rude = await tcpServer(misbehave)
    const out = await sender().send({ url: rude.origin, ...req })
    expect(out).toMatchObject({ success: false, status: 52, message, network: true, responseSize: 0 })
  })

  it.each([
    ['closed', (s: net.Socket) => s.destroy()],
    ['reset', (s: net.Socket) => s.resetAndDestroy()],
  ])('reports a connection %s in the middle of the body as a receive failure (56)', async (_how, end) => {
    const breaks = await tcpServer((socket) => {
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial', () =>
          setTimeout(() => end(socket), 20),
        )
      })
    })
    const out = await sender().send({ url: breaks.origin, ...req })
    expect(out).toMatchObject({
      success: false,
      status: 56,
      network: true,
      responseBody: 'partial',
      responseSize: 7,
    })
    expect(out.message).toMatch(/^Failure receiving the response: /)
  })
})

describe('WebhookSender: caller mistakes', () => {
  it.each([
    ['a CR/LF in a header value', { 'X-Note': 'a\r\nX-Injected: 1' }],
    ['a Transfer-Encoding header', { 'Transfer-Encoding': 'chunked' }],
  ])('rejects %s, sending nothing', async (_what, headers) => {
    const listener = await ok()
    await expect(sender().send({ url: listener.origin, headers, body: '{}' })).rejects.toMatchObject({
      code: 'UND_ERR_INVALID_ARG',
    })
    expect(listener.requests).toHaveLength(0)
  })
})

describe('WebhookSender: address guard', () => {
  it('refuses an IP literal outside the allowed ranges without connecting (7)', async () => {
    const other = await tcpServer(() => {}, '127.0.0.2')
    const out = await sender().send({ url: other.origin, ...req })
    expect(out).toMatchObject({
      success: false,
      status: 7,
      message:
        'Address 127.0.0.2 (loopback) is not allowed: webhooks go only to public addresses and those in WEBHOOK_ALLOWED_CIDRS',
      network: true,
    })
    expect(other.connections).toBe(0)
  })

  it('reaches that same listener once its range is allowed', async () => {
    const other = await httpServer((_r, res) => res.end('ok'), '127.0.0.2')
    const out = await sender({ allowedCidrs: ['127.0.0.0/8'] }).send({ url: other.origin, ...req })
    expect(out).toMatchObject({ success: true, status: 200 })
    expect(other.connections).toBe(1)
  })

  it('refuses a name that resolves outside the allowed ranges without connecting (7)', async () => {
    const other = await tcpServer(() => {}, '127.0.0.2')
    const out = await sender({ resolver: resolveTo('127.0.0.2') }).send({
      url: `http://hooks.example.test:${other.port}/`,
      ...req,
    })
    expect(out).toMatchObject({
      success: false,
      status: 7,
      message:
        'Address 127.0.0.2 (loopback) is not allowed: webhooks go only to public addresses and those in WEBHOOK_ALLOWED_CIDRS',
      network: true,
    })
    expect(other.connections).toBe(0)
  })

  it('connects to the first allowed address of a name, never to a refused one', async () => {
    const allowed = await ok()
    // The same port on both addresses, so only the address decides which listener is reached.
    const refused = await tcpServer(() => {}, '127.0.0.2', allowed.port)
    const resolver = resolveTo('127.0.0.2', '127.0.0.1')
    const out = await sender({ resolver }).send({ url: `http://hooks.example.test:${allowed.port}/`, ...req })
    expect(out).toMatchObject({ success: true, status: 200 })
    expect(allowed.requests).toHaveLength(1)
    expect(refused.connections).toBe(0)
  })
})
