import http from 'node:http'
import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { SocketConnections } from '../src/connections/socket-connections.js'
import { metricsServer } from '../src/http/metrics-listener.js'
import { basic } from './helpers/dav.js'
import { download, req, target, uploaded } from './helpers/files.js'
import { ADMIN_PASSWORD, dialects, useServer } from './helpers/server.js'
import { startWebhookRecorder, type WebhookRecorder } from './helpers/webhook-recorder.js'

const TOKEN = 'scrape-token-1'

/** The value of one series in Prometheus's text format (0 when absent), labels matched exactly. */
function value(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][\w:]*)(\{(.*)\})? (\S+)$/.exec(line)
    if (!m || m[1] !== name) continue
    const got = Object.fromEntries(
      [...(m[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]),
    )
    if (Object.keys(got).length !== Object.keys(labels).length) continue
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[4])
  }
  return 0
}

describe('Prometheus metrics', () => {
  let listener: http.Server
  let url: string
  beforeAll(async () => {
    listener = metricsServer(TOKEN)
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(listener.address() as net.AddressInfo).port}/metrics`
  })
  afterAll(() => new Promise<void>((resolve) => listener.close(() => resolve())))

  const scrape = async () => {
    const r = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
    return r.text()
  }

  it('refuses a scrape without the token, or with another, and serves nothing else', async () => {
    expect((await fetch(url)).status).toBe(401)
    const wrong = await fetch(url, { headers: { authorization: 'Bearer nope' } })
    expect(wrong.status).toBe(401)
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer realm="metrics"')
    expect(
      (await fetch(url.replace('/metrics', '/other'), { headers: { authorization: `Bearer ${TOKEN}` } }))
        .status,
    ).toBe(404)
    const open = metricsServer(undefined)
    await new Promise<void>((resolve) => open.listen(0, '127.0.0.1', resolve))
    try {
      const r = await fetch(`http://127.0.0.1:${(open.address() as net.AddressInfo).port}/metrics`)
      expect(r.status).toBe(200)
    } finally {
      open.close()
    }
  })

  it("has Node's own metrics", async () => {
    const text = await scrape()
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m)
    expect(text).toMatch(/^nodejs_heap_size_used_bytes \d/m)
    expect(text).toMatch(/^process_cpu_seconds_total \d/m)
  })

  it('counts open SFTP and FTP connections while they are open', async () => {
    const conns = new SocketConnections('SFTP', {
      maxSessionsPerIp: 10,
      maxSessionsPerUser: 10,
      loginTimeoutMs: 60_000,
      idleTimeoutMs: 60_000,
    } as ConstructorParameters<typeof SocketConnections>[1])
    const server = net.createServer((socket) => {
      conns.accept(socket, '127.0.0.1', { tooManyFromAddress: () => socket.destroy() } as never)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const before = value(await scrape(), 'wharf_sessions_open', { interface: 'sftp' })
    const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1')
    await vi.waitFor(() => expect(conns.size).toBe(1))
    expect(value(await scrape(), 'wharf_sessions_open', { interface: 'sftp' })).toBe(before + 1)
    client.destroy()
    await vi.waitFor(() => expect(conns.size).toBe(0))
    expect(value(await scrape(), 'wharf_sessions_open', { interface: 'sftp' })).toBe(before)
    server.close()
  })

  describe.each(dialects)('after real traffic (%s)', (dialect) => {
    let recorder: WebhookRecorder
    beforeAll(async () => {
      recorder = await startWebhookRecorder(() => ({ status: 200 }))
    })
    afterAll(() => recorder.close())
    const s = useServer(dialect, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })

    it('counts requests by route and status, logins, transfers and their bytes, deliveries, and the queues', async () => {
      const t = target(s)
      expect(
        (
          await req(t, 'PATCH', '/webhook_settings', {
            url: recorder.url,
            triggers: ['Upload'],
            enabled: true,
          })
        ).status,
      ).toBe(200)
      const before = await scrape()
      const routeSeries = { method: 'GET', route: '/api/rest/v1/files/*', status: '200' }

      await uploaded(s, 'metrics/one.bin', Buffer.alloc(1234, 1))
      expect((await download(t, 'metrics/one.bin')).length).toBe(1234)
      const failed = await fetch(`${s.api}/sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password: 'wrong-password' }),
      })
      expect(failed.status).toBe(401)
      await recorder.waitFor(1, 20_000)
      await vi.waitFor(async () =>
        expect(
          value(await scrape(), 'wharf_webhook_deliveries_total', { endpoint: 'site', result: 'success' }) -
            value(before, 'wharf_webhook_deliveries_total', { endpoint: 'site', result: 'success' }),
        ).toBe(1),
      )

      const after = await scrape()
      const delta = (name: string, labels: Record<string, string> = {}) =>
        value(after, name, labels) - value(before, name, labels)
      expect(delta('wharf_http_requests_total', routeSeries)).toBe(1)
      expect(
        delta('wharf_http_request_duration_seconds_count', { method: 'GET', route: '/api/rest/v1/files/*' }),
      ).toBe(1)
      expect(
        delta('wharf_http_requests_total', { method: 'POST', route: '/api/rest/v1/sessions', status: '401' }),
      ).toBe(1)
      expect(delta('wharf_logins_total', { interface: 'restapi', result: 'failure' })).toBe(1)
      expect(delta('wharf_transfers_total', { interface: 'restapi', direction: 'up' })).toBe(1)
      expect(delta('wharf_transfer_bytes_total', { interface: 'restapi', direction: 'up' })).toBe(1234)
      expect(delta('wharf_transfers_total', { interface: 'restapi', direction: 'down' })).toBe(1)
      expect(delta('wharf_transfer_bytes_total', { interface: 'restapi', direction: 'down' })).toBe(1234)
      expect(delta('wharf_actions_total', { action: 'create', interface: 'restapi' })).toBeGreaterThanOrEqual(
        1,
      )
      expect(after).toMatch(/^wharf_webhook_queue_depth\{endpoint="site"\} \d+$/m)
      expect(after).toMatch(/^wharf_webhook_queue_oldest_age_seconds\{endpoint="site"\} [\d.]+$/m)
      expect(after).toMatch(/^wharf_mail_queue_depth \d+$/m)
      expect(
        delta('wharf_background_job_runs_total', { worker: 'WebhookDispatcher', result: 'ok' }),
      ).toBeGreaterThan(0)
      if (dialect === 'postgres') expect(value(after, 'wharf_db_pool_connections')).toBeGreaterThan(0)
    })

    it('counts a WebDAV connection as open from its first signed-in request until it closes', async () => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
      const propfind = (auth: string | null) =>
        new Promise<number>((resolve, reject) => {
          const headers: Record<string, string> = { Depth: '0' }
          if (auth) headers['Authorization'] = auth
          http
            .request(`${s.url}/dav/`, { method: 'PROPFIND', agent, headers }, (res) => {
              res.resume()
              res.on('end', () => resolve(res.statusCode ?? 0))
            })
            .on('error', reject)
            .end()
        })
      const open = async () => value(await scrape(), 'wharf_sessions_open', { interface: 'dav' })
      const before = await open()
      // Refused credentials open no session.
      expect(await propfind(basic('admin', 'wrong-password'))).toBe(401)
      expect(await open()).toBe(before)
      const auth = basic('admin', ADMIN_PASSWORD)
      expect(await propfind(auth)).toBe(207)
      expect(await propfind(auth)).toBe(207)
      expect(await open()).toBe(before + 1)
      agent.destroy()
      await vi.waitFor(async () => expect(await open()).toBe(before))
    })
  })
})
