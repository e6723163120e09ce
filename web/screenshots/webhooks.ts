import type { Page } from 'playwright-core'
import { call, type TestServer } from '../../test/helpers/server.js'
import { type LogRecord, seedLog } from '../../test/helpers/webhook-log-fixtures.js'

/**
 * Screenshots of the developer settings and the webhook log: a listener configured, a day of
 * deliveries with some failures, and one request's details open.
 */
export async function shoot(ctx: { page: Page; s: TestServer; out(name: string): string }): Promise<void> {
  const { page, s, out } = ctx
  const url = 'https://hooks.example.com/wharf/events'
  const r = await call(s, 'PATCH', '/webhook_settings', {
    key: s.adminKey,
    body: { url, triggers: ['Upload', 'Delete', 'Move'], enabled: true },
  })
  if (r.status !== 200) throw new Error(`webhook settings: ${r.status} ${r.text}`)

  const now = Date.now()
  const hour = 3600_000
  const files = ['invoices/2026-11/acme.pdf', 'scans/contract-7.tif', 'inbox/report.csv', 'photos/site-a.jpg']
  const records: LogRecord[] = []
  for (let i = 0; i < 46; i++) {
    const at = now - 23 * hour + Math.round((i / 46) * 23 * hour) + ((i * 7919) % 1800) * 1000
    const path = files[i % files.length]!
    const failure = i % 9 === 4 ? 500 : i % 13 === 6 ? 503 : i === 30 ? 7 : null
    records.push(
      failure === null
        ? {
            path,
            url,
            createdAt: at,
            operation: i % 5 === 0 ? 'Delete' : 'Upload',
            responseBody: '{"received":true}',
          }
        : {
            path,
            url,
            createdAt: at,
            status: failure,
            success: false,
            message:
              failure === 7
                ? 'Failed to connect: connection refused'
                : failure === 500
                  ? 'HTTP 500 Internal Server Error'
                  : 'HTTP 503 Service Unavailable',
            responseBody:
              failure === 7
                ? ''
                : failure === 500
                  ? 'Traceback: disk full on worker-2'
                  : 'Maintenance until 02:00',
            attempt: failure === 503 ? 2 : 1,
          },
    )
  }
  await seedLog(s, records)

  const nav = page.getByRole('navigation', { name: 'Main' })
  await nav.getByRole('link', { name: 'Developer' }).click()
  await page.getByLabel('Listener URL').waitFor({ timeout: 10_000 })
  await page.screenshot({ path: out('developer'), fullPage: true })

  await nav.getByRole('link', { name: 'Webhook logs' }).click()
  const rows = page.locator('tbody tr[data-record-id]')
  await rows.first().waitFor({ timeout: 15_000 })
  await page.screenshot({ path: out('webhook-logs'), fullPage: true })

  const failed = rows.filter({ has: page.getByRole('button', { name: /^Retry/ }) }).first()
  await failed.getByRole('button', { name: /^Details/ }).click()
  await page.locator('tr.wh-details').waitFor({ timeout: 10_000 })
  await failed.scrollIntoViewIfNeeded()
  await page.screenshot({ path: out('webhook-log-details'), fullPage: true })
}
