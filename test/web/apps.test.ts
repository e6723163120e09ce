import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
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
import { call, makeUser } from '../helpers/server.js'

describe.skipIf(!hasBrowser)('web interface: apps', BROWSER_SUITE, () => {
  let dir: string
  let file: string
  beforeAll(async () => {
    // The shipped catalog has no pictures; these entries have one elsewhere and one on the server.
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'wharf-apps-'))
    file = path.join(dir, 'apps.json')
    await fs.writeFile(
      file,
      JSON.stringify({
        extends: 'default',
        apps: [
          {
            name: 'Acme Sync',
            app_type: 'client_app',
            featured: true,
            short_description: 'Keeps a folder in step with Wharf.',
            icon_url: 'https://icons.example.com/acme.png',
            logo_thumbnail_url: 'https://icons.example.com/acme-small.png',
            documentation_links: { guide: 'https://docs.example.com/acme' },
            external_homepage_url: 'https://acme.example.com/',
          },
          {
            name: 'Local Tool',
            app_type: 'app_integration',
            short_description: 'Its icon lives on this server.',
            icon_url: '/icons/local-tool.png',
          },
        ],
      }),
    )
  })
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true })
  })
  // Started after the catalog file is written, and closed before it is removed.
  const web = webSuite(() => ({ APPS_FILE: file }))

  it('lists the whole catalog, links out safely and fetches nothing from elsewhere', async () => {
    const u = await makeUser(web.s)
    const catalog = await call(web.s, 'GET', '/apps?per_page=1000', { key: web.s.adminKey })
    const names: string[] = catalog.body.map((a: { name: string }) => a.name)
    expect(names.length).toBeGreaterThan(5)

    // Any user reads the catalog, not only site admins.
    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s, u.username, u.password)
    await page.goto(`${web.s.url}/#/apps`)
    for (const name of names) await shown(page.getByRole('heading', { level: 2, name, exact: true }))
    expect(await page.getByRole('article').count()).toBe(names.length)

    const acme = page.getByRole('article', { name: 'Acme Sync' })
    expect(await textOf(acme)).toContain('Featured')
    const guide = acme.getByRole('link', { name: 'guide' })
    expect(await guide.getAttribute('href')).toBe('https://docs.example.com/acme')
    expect(await guide.getAttribute('rel')).toBe('noopener noreferrer')
    // The icon hosted elsewhere is not loaded: the app's initial stands in for it.
    expect(await acme.locator('img').count()).toBe(0)
    expect(await textOf(acme.locator('.app-initial'))).toBe('A')
    // A link written as a path points at this Wharf.
    const sdk = page.getByRole('article', { name: 'Files.com JavaScript SDK' })
    expect(await sdk.getByRole('link', { name: 'api' }).getAttribute('href')).toBe(
      `${web.s.url}/api/rest/v1/swagger_doc`,
    )
    // The icon on the server is tried, and its initial shown when it is missing.
    await shown(page.getByRole('article', { name: 'Local Tool' }).locator('.app-initial'))

    // Searching narrows the cards; the type select too.
    await page.getByLabel('Search apps').fill('folder in step')
    await expect.poll(() => page.getByRole('article').count(), { timeout: 10_000 }).toBe(1)
    await shown(page.getByRole('heading', { name: 'Acme Sync' }))
    await page.getByLabel('Search apps').fill('')
    await page.getByLabel('Type').selectOption({ label: 'SDK' })
    const sdks = names.filter((n) => catalog.body.find((a: any) => a.name === n).app_type === 'sdk')
    await expect.poll(() => page.getByRole('article').count(), { timeout: 10_000 }).toBe(sdks.length)

    expectNoOutsideRequests(page)
    await page.context().close()
  })

  it('shows the catalog at phone width', async () => {
    const page = await newPage(web.browser, web.s, { width: 390, height: 844 })
    await signIn(page, web.s)
    await page.goto(`${web.s.url}/#/apps`)
    const card = page.getByRole('article', { name: 'Acme Sync' })
    await shown(card)
    const box = (await card.boundingBox())!
    expect(box.width).toBeLessThanOrEqual(390)
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390)
    expectNoOutsideRequests(page)
    await page.context().close()
  })
})
