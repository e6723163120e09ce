import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BROWSER_SUITE, hasBrowser, newPage, shown, signIn, webSuite } from '../helpers/browser.js'
import { startListener, type TestListener } from '../helpers/listener.js'
import { call } from '../helpers/server.js'

/** What users do in the web interface reaches their listener as protocol `web`. */
describe.skipIf(!hasBrowser)('web interface: webhooks of its actions', BROWSER_SUITE, () => {
  let listener: TestListener
  beforeAll(async () => {
    listener = await startListener()
  })
  afterAll(async () => {
    await listener?.close()
  })
  const web = webSuite({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' })

  it('notifies a folder created in the page with protocol web, and one made through the API with restapi', async () => {
    const saved = await call(web.s, 'PATCH', '/webhook_settings', {
      key: web.s.adminKey,
      body: { url: listener.url, triggers: ['Create Folder'], enabled: true },
    })
    expect(saved.status).toBe(200)
    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s)
    await page.getByLabel('New folder name').fill('from the page')
    await page.getByRole('button', { name: 'Create folder' }).click()
    await shown(page.getByRole('link', { name: 'from the page' }))
    const [fromPage] = await listener.waitFor(1, 15_000)
    expect(fromPage!.json).toMatchObject({ path: 'from the page', protocol: 'web' })

    expect((await call(web.s, 'POST', '/folders/from%20the%20api', { key: web.s.adminKey })).status).toBe(201)
    const [, fromApi] = await listener.waitFor(2, 15_000)
    expect(fromApi!.json).toMatchObject({ path: 'from the api', protocol: 'restapi' })
    await page.context().close()
  })
})
