import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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
import { startListener, type TestListener } from '../helpers/listener.js'
import { call } from '../helpers/server.js'

describe.skipIf(!hasBrowser)('web interface: webhook endpoints beside the log', BROWSER_SUITE, () => {
  let listener: TestListener
  beforeAll(async () => {
    listener = await startListener()
  })
  afterAll(async () => {
    await listener?.close()
  })
  const web = webSuite({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })

  const states = async (path: string) =>
    (
      await web.s.container.db
        .selectFrom('webhook_notifications')
        .select('state')
        .where('path', '=', path)
        .execute()
    ).map((n) => n.state)

  it('shows endpoint health, pauses and enables an endpoint, and recovers with a dry-run count', async () => {
    const b = await call(web.s, 'POST', '/behaviors', {
      key: web.s.adminKey,
      body: { path: 'hooks', behavior: 'webhook', value: { urls: [listener.url], triggers: ['Upload'] } },
    })
    expect(b.status, b.text).toBe(201)
    await uploaded(web.s, 'hooks/one.txt', 'x')
    await listener.waitFor(1)
    await expect.poll(() => states('hooks/one.txt')).toEqual(['delivered'])

    const page = await newPage(web.browser, web.s)
    page.setDefaultTimeout(10_000)
    await signIn(page, web.s)
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhook logs' }).click()
    const panel = page.getByRole('region', { name: 'Endpoints' })
    const row = panel.locator('tbody tr').filter({ hasText: listener.url })
    expect(await textOf(row.locator('th'))).toContain(`Behavior ${b.body.id} on /hooks`)
    expect(await textOf(row.locator('.wh-state'))).toBe('enabled')
    expect(await textOf(row.locator('td').nth(1))).toContain('1 attempts, 100 % ok')

    // Paused: what comes is kept, not sent.
    await row.getByRole('button', { name: /^Pause/ }).click()
    await expect.poll(() => textOf(row.locator('.wh-state'))).toBe('paused')
    await uploaded(web.s, 'hooks/two.txt', 'x')
    await expect.poll(() => states('hooks/two.txt')).toEqual(['held'])
    expect(listener.received).toHaveLength(1)
    // Enabled: sent.
    await row.getByRole('button', { name: /^Enable/ }).click()
    await expect.poll(() => textOf(row.locator('.wh-state'))).toBe('enabled')
    await listener.waitFor(2)

    // Recovery: counted first, then sent again.
    await row.getByRole('button', { name: /^Recover/ }).click()
    const form = page.getByRole('form', { name: `Recover notifications of ${listener.url}` })
    await shown(form)
    await form.getByLabel('Only failed ones').uncheck()
    await form.getByRole('button', { name: 'Count' }).click()
    expect(await textOf(form.getByRole('status'))).toBe('2 notifications would be sent again.')
    expect(listener.received).toHaveLength(2)
    await form.getByRole('button', { name: 'Send again' }).click()
    expect(await textOf(form.getByRole('status'))).toBe('2 notifications queued again.')
    await listener.waitFor(4)
    expectNoOutsideRequests(page)
    await page.context().close()
  })
})
