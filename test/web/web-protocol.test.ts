import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hasBrowser, launchBrowser, newPage, shown, signIn, startWebServer } from '../helpers/browser.js'
import { startListener, type TestListener } from '../helpers/listener.js'
import { call, type TestServer } from '../helpers/server.js'

/** What users do in the web interface reaches their listener as protocol `web`. */
describe.skipIf(!hasBrowser)('web interface: webhooks of its actions', () => {
  let s: TestServer
  let browser: Browser
  let listener: TestListener
  beforeAll(async () => {
    listener = await startListener()
    s = await startWebServer({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await s?.close()
    await listener?.close()
  })

  it('notifies a folder created in the page with protocol web, and one made through the API with restapi', async () => {
    const saved = await call(s, 'PATCH', '/webhook_settings', {
      key: s.adminKey,
      body: { url: listener.url, triggers: ['Create Folder'], enabled: true },
    })
    expect(saved.status).toBe(200)
    const page = await newPage(browser, s)
    await signIn(page, s)
    await page.getByLabel('New folder name').fill('from the page')
    await page.getByRole('button', { name: 'Create folder' }).click()
    await shown(page.getByRole('link', { name: 'from the page' }))
    const [fromPage] = await listener.waitFor(1, 15_000)
    expect(fromPage!.json).toMatchObject({ path: 'from the page', protocol: 'web' })

    expect((await call(s, 'POST', '/folders/from%20the%20api', { key: s.adminKey })).status).toBe(201)
    const [, fromApi] = await listener.waitFor(2, 15_000)
    expect(fromApi!.json).toMatchObject({ path: 'from the api', protocol: 'restapi' })
    await page.context().close()
  })
})
