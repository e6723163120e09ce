import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../src/app.js'
import { operatorPrincipal } from '../src/identity/principal.js'
import { createLogger, redactUrl } from '../src/logger.js'
import { beginUpload, partUrl, target, uploaded } from './helpers/files.js'
import { readyHistoryExport } from './helpers/history-export-fixtures.js'
import { captureLog } from './helpers/log-capture.js'
import { call, dialects, useServer } from './helpers/server.js'

describe.each(dialects)('signed links in the request log (%s)', (dialect) => {
  let app: FastifyInstance
  let origin: string
  const log = captureLog()

  const s = useServer(dialect)
  beforeAll(async () => {
    // A second front end on the same container, logging at info as `wharf serve` does.
    app = await buildApp(s.container, { logger: createLogger('info', log.stream) })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const addr = app.server.address()
    origin = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`
  })
  afterAll(async () => {
    await app?.close()
  })

  /** The link, sent to the logging front end instead of the one that handed it out. */
  const viaLog = (link: string) => {
    const u = new URL(link)
    return `${origin}${u.pathname}${u.search}`
  }
  const logged = (route: string) => log.lines.filter((l) => l.includes(route))
  /** The access log is written once a response has gone out, so a moment after the client has it. */
  async function loggedOnce(route: string, count = 1) {
    for (let i = 0; i < 200 && logged(route).length < count; i++) await new Promise((r) => setTimeout(r, 25))
    return logged(route)
  }

  it('logs a download link by its route, never its token (GET and HEAD)', async () => {
    await uploaded(s, 'logs/report.txt', 'secret report')
    const file = await call(s, 'GET', '/files/logs%2Freport.txt', { key: s.adminKey })
    const link = file.body.download_uri as string
    const token = decodeURIComponent(new URL(link).pathname.split('/').at(-2)!)
    const get = await fetch(viaLog(link))
    expect(get.status).toBe(200)
    expect(await get.text()).toBe('secret report')
    expect((await fetch(viaLog(link), { method: 'HEAD' })).status).toBe(200)
    // A refused link (its signature altered) is logged without its token too.
    const tampered = link.replace(/~([^/])/, '~x$1')
    expect((await fetch(viaLog(tampered))).status).toBe(401)

    expect(await loggedOnce('/api/rest/v1/downloads/[redacted]/report.txt', 3)).toHaveLength(3)
    for (const line of log.lines) {
      expect(line).not.toContain(token)
      expect(line).not.toContain(token.split('~')[1])
    }
  })

  it('logs an upload part URL without its signature', async () => {
    const t = target(s)
    const first = await beginUpload(t, 'logs/part.bin')
    const part = await partUrl(t, 'logs/part.bin', first.ref, 1)
    const signature = new URL(part.upload_uri).searchParams.get('signature')!
    const put = await fetch(viaLog(part.upload_uri), { method: 'PUT', body: 'bytes' })
    expect(put.status).toBe(200)
    expect(await loggedOnce(`/upload_parts/${first.ref}/1?`)).toHaveLength(1)
    for (const line of log.lines) expect(line).not.toContain(signature)
  })

  it('logs an export CSV link and a billing PDF link without their signatures', async () => {
    const ready = await readyHistoryExport(s, {}, { key: s.adminKey })
    const invoiceId = await s.container.services.billingLedger.createInvoice(
      operatorPrincipal(s.container.site.id),
      {
        currency: 'USD',
        lines: [
          {
            amount: '1.00',
            description: 'Storage',
            plan: 'Storage',
            service_start_at: '2025-01-01',
            service_end_at: '2025-01-31',
          },
        ],
      },
    )
    const invoice = await call(s, 'GET', `/invoices/${invoiceId}`, { key: s.adminKey })
    for (const link of [ready.results_url as string, invoice.body.download_uri as string]) {
      const u = new URL(link)
      const res = await fetch(viaLog(link))
      expect(res.status).toBe(200)
      await res.arrayBuffer()
      expect(await loggedOnce(`${u.pathname}?`)).toHaveLength(1)
      for (const line of log.lines) expect(line).not.toContain(u.searchParams.get('signature')!)
    }
  })

  it('redacts a download token however the path is written', () => {
    expect(redactUrl('/api/rest/v1/downloads/abc~def/a.txt')).toBe('/api/rest/v1/downloads/[redacted]/a.txt')
    expect(redactUrl('/api/rest/v1/downloads/abc%7Edef')).toBe('/api/rest/v1/downloads/[redacted]')
    expect(redactUrl('/api/rest/v1/downloads/abc~def/a.txt?signature=s')).toBe(
      '/api/rest/v1/downloads/[redacted]/a.txt?signature=[redacted]',
    )
    // A folder that happens to be called `downloads` is no link.
    expect(redactUrl('/api/rest/v1/files/downloads/a.txt')).toBe('/api/rest/v1/files/downloads/a.txt')
  })
})
