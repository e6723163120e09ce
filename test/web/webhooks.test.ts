import fs from 'node:fs/promises'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WEBHOOK_OPERATIONS } from '../../src/webhooks/webhook-operations.js'
import {
  BROWSER_SUITE,
  expectNoOutsideRequests,
  hasBrowser,
  newPage,
  shown,
  signIn,
  textOf,
  webSuite,
} from '../helpers/browser.js'
import { uploaded } from '../helpers/files.js'
import { type Answer, startListener, type TestListener } from '../helpers/listener.js'
import { cutOff } from '../helpers/phone-layout.js'
import { call, makeUser, type TestServer } from '../helpers/server.js'
import { parseCsv, RESULT_FIELDS, seedLog } from '../helpers/webhook-log-fixtures.js'

describe.skipIf(!hasBrowser)('web interface: developer settings and webhook logs', BROWSER_SUITE, () => {
  let listener: TestListener
  /** How the listener answers the next requests. */
  let answer: Answer = 200
  beforeAll(async () => {
    listener = await startListener(() => answer)
  })
  afterAll(async () => {
    await listener?.close()
  })
  // One automatic retry, ten minutes on: a failure stays a failure until the page retries it.
  const web = webSuite({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_RETRY_SCHEDULE: '600' })

  /** A fresh page whose every wait is bounded well below the test's own time limit. */
  async function pageOf(b: Browser, server: TestServer, viewport?: { width: number; height: number }) {
    const page = await newPage(b, server, viewport)
    page.setDefaultTimeout(10_000)
    return page
  }

  async function open(page: Page, name: string) {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name }).click()
    await shown(page.getByRole('heading', { level: 1, name }))
  }

  const attempts = () =>
    web.s.container.db
      .selectFrom('webhook_attempts')
      .select(['id', 'path', 'success', 'status', 'attempt', 'operation'])
      .orderBy('id')
      .execute()

  it('saves the listener, triggers and switch, refuses a bad URL in words, and sends a test', async () => {
    const page = await pageOf(web.browser, web.s)
    await signIn(page, web.s)
    await open(page, 'Developer')
    await shown(page.getByLabel('Listener URL'))
    const triggers = page.getByRole('group', { name: 'Send a webhook on' }).getByRole('checkbox')
    expect(await triggers.count()).toBe(WEBHOOK_OPERATIONS.length)

    await page.getByLabel('Listener URL').fill('ftp://files.example.com/in')
    await page.getByRole('button', { name: 'Save' }).click()
    expect(await textOf(page.getByRole('alert'))).toBe('Not saved. Listener URL must use http or https.')
    expect((await call(web.s, 'GET', '/webhook_settings', { key: web.s.adminKey })).body.url).toBeNull()

    await page.getByLabel('Listener URL').fill(listener.url)
    await page.getByRole('checkbox', { name: 'Upload' }).check()
    await page.getByRole('checkbox', { name: 'Delete' }).check()
    await page.getByRole('checkbox', { name: 'Webhooks enabled' }).check()
    await page.getByRole('button', { name: 'Save' }).click()
    await shown(page.getByText('Webhook settings saved.'))
    const saved = (await call(web.s, 'GET', '/webhook_settings', { key: web.s.adminKey })).body
    expect(saved).toMatchObject({ url: listener.url, triggers: ['Upload', 'Delete'], enabled: true })
    expect(await page.getByLabel('Verification token').inputValue()).toBe(saved.verification_token)
    expect(await page.getByLabel('Signing secret').inputValue()).toBe(saved.signing_secret)
    const example = await textOf(page.locator('pre').filter({ hasText: 'x-service-signature' }))
    expect(example).toContain("createHash('md5').update(TOKEN + body)")
    expect(await textOf(page.locator('p').filter({ hasText: 'Standard Webhooks' }))).toContain(
      'webhook-signature',
    )

    // The test goes out to the listener, and its answer is shown: success, then a failure.
    answer = { status: 200, body: 'hello from the listener' }
    const before = listener.received.length
    await page.getByRole('button', { name: 'Send test' }).click()
    const ok = await textOf(page.locator('.wh-test-result'))
    expect(ok).toContain('Success')
    expect(ok).toContain('HTTP 200')
    expect(ok).toContain('hello from the listener')
    expect(listener.received[before]?.json).toMatchObject({ operation: 'Test', path: '' })

    answer = { status: 503, body: 'down for maintenance' }
    await page.getByRole('button', { name: 'Send test' }).click()
    await expect.poll(() => page.locator('.wh-test-result').innerText()).toContain('HTTP 503')
    const bad = await textOf(page.locator('.wh-test-result'))
    expect(bad).toContain('Failure')
    expect(bad).toContain('down for maintenance')
    expect(listener.received.length).toBe(before + 2)
    answer = 200
    expectNoOutsideRequests(page)
    await page.context().close()
  })

  it('shows deliveries and a failure, retries it, draws the chart and downloads the CSV', async () => {
    await call(web.s, 'PATCH', '/webhook_settings', {
      key: web.s.adminKey,
      body: { url: listener.url, triggers: ['Upload'], enabled: true },
    })
    const start = listener.received.length
    answer = { status: 200, body: 'stored a' }
    await uploaded(web.s, 'inbox/a.txt', 'first file')
    await listener.waitFor(start + 1)
    answer = { status: 500, body: 'listener broke' }
    await uploaded(web.s, 'inbox/b.txt', 'second file')
    await listener.waitFor(start + 2)
    await expect.poll(async () => (await attempts()).filter((a) => a.path === 'inbox/b.txt').length).toBe(1)
    answer = 200

    const page = await pageOf(web.browser, web.s)
    await signIn(page, web.s)
    await open(page, 'Webhook logs')
    const rowOf = (path: string) => page.locator('tbody tr[data-record-id]').filter({ hasText: path })
    expect(await textOf(rowOf('inbox/a.txt').locator('td').nth(3))).toContain('200')
    const failed = rowOf('inbox/b.txt')
    expect(await textOf(failed.locator('td').nth(3))).toContain('500')
    expect(await textOf(failed.locator('td').nth(1))).toBe(listener.url)
    expect(
      await rowOf('inbox/a.txt')
        .getByRole('button', { name: /^Retry/ })
        .count(),
    ).toBe(0)

    // The chart counts what the log holds: the tests of the first case and these two uploads.
    const rows = await attempts()
    const okCount = rows.filter((r) => r.success === 1).length
    const failCount = rows.length - okCount
    expect(failCount).toBeGreaterThan(0)
    const chart = page.getByRole('img', { name: /Webhook deliveries per hour/ })
    expect(await chart.getAttribute('aria-label')).toContain(`${okCount} succeeded, ${failCount} failed`)
    const sum = async (cls: string) =>
      (await page.locator(`svg rect.${cls}`).evaluateAll((rs) => rs.map((r) => r.getAttribute('data-count'))))
        .map(Number)
        .reduce((a, b) => a + b, 0)
    expect(await sum('wh-ok')).toBe(okCount)
    expect(await sum('wh-failed')).toBe(failCount)
    for (const r of await page.locator('svg rect.wh-bar').all()) {
      expect(Number(await r.getAttribute('height'))).toBeGreaterThan(0)
    }

    // Details: the headers sent, the payload and the listener's answer.
    await failed.getByRole('button', { name: /^Details/ }).click()
    const details = page.locator('tr.wh-details')
    const text = await textOf(details)
    expect(text).toContain('X-Service-Signature')
    expect(text).toContain('"path": "inbox/b.txt"')
    expect(text).toContain('listener broke')

    // The CSV behind the export: header row and every record shown.
    const [download] = await Promise.all([
      page.waitForEvent('download', { timeout: 10_000 }),
      page.getByRole('link', { name: 'Download CSV' }).click(),
    ])
    const csv = parseCsv(await fs.readFile((await download.path())!, 'utf8'))
    expect(csv[0]).toEqual([...RESULT_FIELDS])
    expect(csv.slice(1).map((r) => Number(r[0]))).toEqual(rows.map((r) => r.id))
    expect(csv.slice(1).find((r) => r[8] === 'inbox/b.txt')?.[2]).toBe('500')

    // Retry once the listener is fixed: it receives b again, and the log then shows the success.
    const sent = listener.received.length
    await failed.getByRole('button', { name: /^Retry/ }).click()
    await shown(page.getByText('Retry queued'))
    const again = await listener.waitFor(sent + 1)
    expect(again[sent]?.json).toMatchObject({ path: 'inbox/b.txt', attempt: 2 })
    await expect
      .poll(async () => (await attempts()).filter((a) => a.path === 'inbox/b.txt' && a.success === 1).length)
      .toBe(1)
    await page.getByRole('button', { name: 'Refresh' }).first().click()
    const retried = page
      .locator('tbody tr[data-record-id]')
      .filter({ hasText: 'inbox/b.txt' })
      .filter({ has: page.locator('td:nth-child(5)', { hasText: /^2$/ }) })
    expect(await textOf(retried.locator('td').nth(3))).toContain('200')
    // b's failed attempt has since been delivered: it offers no Retry (the API would refuse it).
    const firstB = rowOf('inbox/b.txt').filter({ has: page.locator('td:nth-child(5)', { hasText: /^1$/ }) })
    expect(await textOf(firstB.locator('.wh-delivered-later'))).toBe('Delivered by attempt 2')
    expect(await firstB.getByRole('button', { name: /^Retry/ }).count()).toBe(0)

    // Only failures: the filter reaches the export.
    await page.getByRole('combobox', { name: /^Succeeded/ }).selectOption('false')
    await page.getByRole('button', { name: 'Refresh' }).first().click()
    await expect
      .poll(() => page.locator('tbody tr[data-record-id]').count())
      .toBe((await attempts()).filter((a) => a.success === 0).length)
    expect(await page.locator('tbody tr[data-record-id] .badge.ok').count()).toBe(0)
    // The delivering attempt is filtered out, yet the results say b was delivered: no Retry.
    const onlyB = rowOf('inbox/b.txt')
    expect(await onlyB.count()).toBe(1)
    expect(await textOf(onlyB.locator('.wh-delivered-later'))).toBe('Delivered by attempt 2')
    expect(await onlyB.getByRole('button', { name: /^Retry/ }).count()).toBe(0)

    // A failure delivered after the page read the log still offers Retry: the refusal is put in
    // words, nothing is sent, and the button goes.
    answer = { status: 500, body: 'listener broke' }
    await uploaded(web.s, 'inbox/c.txt', 'third file')
    await expect.poll(async () => (await attempts()).filter((a) => a.path === 'inbox/c.txt').length).toBe(1)
    answer = 200
    await page.getByRole('button', { name: 'Refresh' }).first().click()
    const onlyC = rowOf('inbox/c.txt')
    await shown(onlyC.getByRole('button', { name: /^Retry/ }))
    const failedC = (await attempts()).find((a) => a.path === 'inbox/c.txt')!
    const behind = await call(web.s, 'POST', `/action_webhook_failures/${failedC.id}/retry`, {
      key: web.s.adminKey,
    })
    expect(behind.status, behind.text).toBe(204)
    await expect
      .poll(async () => (await attempts()).filter((a) => a.path === 'inbox/c.txt' && a.success === 1).length)
      .toBe(1)
    const sentBefore = listener.received.length
    await onlyC.getByRole('button', { name: /^Retry/ }).click()
    expect(await textOf(onlyC.getByRole('alert'))).toMatch(/has since delivered: it is not sent again$/)
    expect(await onlyC.getByRole('button', { name: /^Retry/ }).count()).toBe(0)
    expect(listener.received.length).toBe(sentBefore)
    expectNoOutsideRequests(page)
    await page.context().close()
  })

  it('lists the newest request first, from every page it reads, and the oldest first on request', async () => {
    const hour = 3600_000
    const seeded = await seedLog(
      web.s,
      Array.from({ length: 11 }, (_, i) => ({
        path: `order-test/${i}.txt`,
        createdAt: Date.now() - (11 - i) * hour,
      })),
    )
    const oldestFirst = seeded.map((r) => r.id)
    const page = await pageOf(web.browser, web.s)
    await signIn(page, web.s)
    // One record a page: ten pages are read before any shows, the eleventh (newest) waits.
    await page.goto(`${web.s.url}/#/webhook-logs?per_page=1`)
    await page.getByLabel('Folder', { exact: true }).fill('order-test')
    await page.getByRole('button', { name: /^(Show|Refresh)$/ }).click()
    const ids = () =>
      page
        .locator('tbody tr[data-record-id]')
        .evaluateAll((trs: any[]) => trs.map((tr) => Number(tr.dataset.recordId)))
    await expect.poll(ids).toEqual(oldestFirst.slice(0, 10).reverse())
    expect(await textOf(page.locator('.wh-partial'))).toContain('newer ones follow with Load more')
    await page.getByRole('button', { name: 'Load more' }).click()
    await expect.poll(ids).toEqual([...oldestFirst].reverse())
    expect(await page.locator('.wh-partial').count()).toBe(0)
    await page.getByLabel('Order').selectOption('oldest')
    expect(await ids()).toEqual(oldestFirst)
    await page.context().close()
  })

  it('filters the log by webhook behavior', async () => {
    const seeded = await seedLog(
      web.s,
      Array.from({ length: 4 }, (_, i) => ({ path: `behavior-test/${i}.txt` })),
    )
    // Records 1 and 3 were requests of behavior 77; the others the site's listener's.
    await web.s.container.db
      .updateTable('webhook_attempts')
      .set({ behavior_id: 77 })
      .where('id', 'in', [seeded[1]!.id, seeded[3]!.id])
      .execute()
    const page = await pageOf(web.browser, web.s)
    await signIn(page, web.s)
    await page.goto(`${web.s.url}/#/webhook-logs`)
    await page.getByLabel('Folder', { exact: true }).fill('behavior-test')
    await page.getByLabel('Behavior', { exact: true }).fill('77')
    await page.getByRole('button', { name: /^(Show|Refresh)$/ }).click()
    const ids = () =>
      page
        .locator('tbody tr[data-record-id]')
        .evaluateAll((trs: any[]) => trs.map((tr) => Number(tr.dataset.recordId)))
    await expect.poll(ids).toEqual([seeded[3]!.id, seeded[1]!.id])
    await page.getByLabel('Behavior', { exact: true }).fill('')
    await page.getByRole('button', { name: /^(Show|Refresh)$/ }).click()
    await expect.poll(ids).toEqual(seeded.map((r) => r.id).reverse())
    await page.context().close()
  })

  it('works at phone width', async () => {
    const page = await pageOf(web.browser, web.s, { width: 390, height: 844 })
    await signIn(page, web.s)
    await page.goto(`${web.s.url}/#/webhook-logs`)
    await shown(page.locator('tbody tr[data-record-id]'))
    const width = await page.evaluate<number>('document.documentElement.scrollWidth')
    expect(width).toBeLessThanOrEqual(390)
    // The chart scales into its card: nothing of it is cut off, down to the last hour's bar.
    const card = '.wh-chart'
    expect(await cutOff(page, `${card} svg`, card)).toEqual([])
    const bars = page.locator(`${card} svg rect.wh-bar`)
    expect(await bars.count()).toBeGreaterThan(0)
    expect(await cutOff(page, `${card} svg rect.wh-bar >> nth=-1`, card)).toEqual([])
    const lastBar = await bars.last().evaluate((r: any) => r.getBoundingClientRect().right)
    const plotEnd = await page
      .locator(`${card} svg line.wh-baseline`)
      .evaluate((l: any) => l.getBoundingClientRect().right)
    expect(lastBar).toBeLessThanOrEqual(plotEnd + 0.5)
    const labels = `${card} svg text.wh-axis:not(.wh-axis-alt)`
    expect(await page.locator(labels).count()).toBeGreaterThan(1)
    expect(await cutOff(page, labels, 'svg')).toEqual([])
    // Vertically too: the labels stay inside the drawing.
    const outside = await page.locator(labels).evaluateAll((ts: any[]) =>
      ts
        .filter((t) => {
          const r = t.getBoundingClientRect()
          const box = t.closest('svg').getBoundingClientRect()
          return r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5
        })
        .map((t) => `${t.textContent} ${t.getBoundingClientRect().top} ${t.getBoundingClientRect().bottom}`),
    )
    expect(outside).toEqual([])
    await page.goto(`${web.s.url}/#/developer`)
    await shown(page.getByLabel('Listener URL'))
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390)
    await page.context().close()
  })

  it('keeps both pages from users who are not site admins', async () => {
    const u = await makeUser(web.s)
    const page = await pageOf(web.browser, web.s)
    await signIn(page, web.s, u.username, u.password)
    const nav = page.getByRole('navigation', { name: 'Main' })
    await shown(nav.getByRole('link', { name: 'Files' }))
    expect(await nav.getByRole('link', { name: 'Developer' }).count()).toBe(0)
    expect(await nav.getByRole('link', { name: 'Webhook logs' }).count()).toBe(0)
    const token = (await call(web.s, 'GET', '/webhook_settings', { key: web.s.adminKey })).body
      .verification_token
    for (const hash of ['#/developer', '#/webhook-logs']) {
      await page.goto(`${web.s.url}/${hash}`)
      expect(await textOf(page.getByRole('alert'))).toBe('Only site administrators can use this page.')
      expect(await page.content()).not.toContain(token)
      expect(await page.locator('tbody tr[data-record-id]').count()).toBe(0)
    }
    await page.context().close()
  })

  it("shows the API's refusal in words to an admin whose rights were taken away meanwhile", async () => {
    const u = await makeUser(web.s, { site_admin: true })
    const page = await pageOf(web.browser, web.s)
    await signIn(page, web.s, u.username, u.password)
    await shown(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Developer' }))
    await web.s.container.db.updateTable('users').set({ site_admin: 0 }).where('id', '=', u.id).execute()
    await open(page, 'Developer')
    expect(await textOf(page.getByRole('alert'))).toBe('Site administrator permission is required')
    expect(await page.getByLabel('Listener URL').count()).toBe(0)
    await open(page, 'Webhook logs')
    expect(await textOf(page.getByRole('alert'))).toBe(
      'Only site administrators may export without query_folder or query_path',
    )
    await page.context().close()
  })
})
