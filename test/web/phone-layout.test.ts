import type { Page } from 'playwright-core'
import { beforeAll, describe, expect, it } from 'vitest'
import { operatorPrincipal } from '../../src/identity/principal.js'
import { BROWSER_SUITE, hasBrowser, newPage, shown, signIn, webSuite } from '../helpers/browser.js'
import { uploaded } from '../helpers/files.js'
import { cutOff, overflowing } from '../helpers/phone-layout.js'
import { call, grant, makeKey, makeUser } from '../helpers/server.js'
import { seedLog } from '../helpers/webhook-log-fixtures.js'

const PHONE = { width: 390, height: 844 }
/** A long address, banned for too many failed logins. */
const BANNED = '2001:db8:85a3:4d2:1319:8a2e:370:7348'

/** What each page shows once its records are in (a page not named here: its heading only). */
const READY: Record<string, (page: Page) => Promise<void>> = {
  Files: (page) => shown(page.getByRole('cell', { name: 'quarterly report 2026 final.pdf' })),
  History: (page) => shown(page.locator('tbody tr[data-action-id]')),
  'Webhook logs': (page) => shown(page.locator('tbody tr[data-record-id]')),
  Shares: (page) => shown(page.locator('tbody tr[data-bundle-id]')),
  Developer: (page) => shown(page.getByLabel('Listener URL')),
  'API keys': (page) => shown(page.locator('tbody tr[data-key-id]')),
  Billing: (page) => shown(page.getByRole('table', { name: 'Invoices' }).locator('tbody tr')),
  Apps: (page) => shown(page.getByRole('article')),
  Users: (page) => shown(page.getByRole('rowheader', { name: 'scanner-bot', exact: true })),
  'Banned addresses': (page) => shown(page.getByRole('cell', { name: BANNED })),
}

/**
 * Everything a person acts on in a page's records: the buttons and links of table rows and
 * cards. Each must be on the screen whole, not past the right edge of a frame that scrolls.
 */
const ROW_ACTIONS = 'main tbody button, main tbody a, main article button, main article a'

/** Files cards whose menu button is not on the line of their name (it wrapped under it). */
const wrappedActions = (page: Page) =>
  page.locator('.files-table tbody tr').evaluateAll((rows: any[]) =>
    rows
      .filter((r) => {
        const name = r.querySelector('td.name')?.getBoundingClientRect()
        const menu = r.querySelector('td.menu-cell')?.getBoundingClientRect()
        return !name || !menu || menu.top >= name.bottom
      })
      .map((r) => String(r.textContent)),
  )

/** Pairs of the chart's shown labels (times and counts) whose boxes meet. */
const touchingLabels = (page: Page) =>
  page.locator('.wh-chart svg text').evaluateAll((texts: any[]) => {
    const boxes = texts
      .filter((t) => t.checkVisibility())
      .map((t) => ({ text: String(t.textContent), r: t.getBoundingClientRect() }))
    return boxes.flatMap((a, i) =>
      boxes
        .slice(i + 1)
        .filter(
          (b) => a.r.left < b.r.right && b.r.left < a.r.right && a.r.top < b.r.bottom && b.r.top < a.r.bottom,
        )
        .map((b) => `${a.text} / ${b.text}`),
    )
  })

/** The page's own width, and what of it reaches past the window, is out of reach or overlaps. */
async function layoutOf(page: Page) {
  return {
    width: await page.evaluate<number>('document.documentElement.scrollWidth'),
    overflowing: await overflowing(page),
    cutOff: await cutOff(page, ROW_ACTIONS),
    wrapped: await wrappedActions(page),
    overlapping: await touchingLabels(page),
  }
}

describe.skipIf(!hasBrowser)('web interface at phone width (390 px)', BROWSER_SUITE, () => {
  const web = webSuite()

  beforeAll(async () => {
    const s = web.s
    const bot = await makeUser(s, { username: 'scanner-bot', email: 'scanner-bot@example.com' })
    await grant(s, bot.id, 'inbox/scans from the copier on floor two', 'writeonly')
    await makeKey(s, bot.id, { name: 'copier upload key', path: 'inbox', permission_set: 'desktop_app' })
    const group = await call(s, 'POST', '/groups', {
      key: s.adminKey,
      body: {
        name: 'scanners of every floor of the building',
        user_ids: String(bot.id),
        admin_ids: String(bot.id),
      },
    })
    expect(group.status).toBe(201)
    await uploaded(s, 'quarterly report 2026 final.pdf', 'numbers')
    const link = await call(s, 'POST', '/bundles', {
      key: s.adminKey,
      body: { paths: ['quarterly report 2026 final.pdf'], password: 'for the board', max_uses: 10 },
    })
    expect(link.status).toBe(201)
    const ledger = s.container.services.billingLedger
    await ledger.createInvoice(operatorPrincipal(s.container.site.id), {
      currency: 'USD',
      lines: [{ amount: '49.00', description: 'Business plan, November', plan: 'Business' }],
    })
    await s.container.db
      .insertInto('banned_addresses')
      .values({
        site_id: s.container.site.id,
        address: BANNED,
        banned_at: Date.now(),
        banned_until: Date.now() + 15 * 60_000,
        failures: 20,
      })
      .execute()
    const hour = 3600_000
    await seedLog(
      s,
      Array.from({ length: 24 }, (_, i) => ({
        path: `inbox/scan-${i}.pdf`,
        url: 'https://hooks.example.com/wharf/events/with/a/long/path',
        createdAt: Date.now() - (23.5 - i) * hour,
        ...(i % 5 === 2 ? { status: 500, success: false, message: 'HTTP 500 Internal Server Error' } : {}),
      })),
    )
  })

  it('fits every page of the menu into the screen, each record’s actions on it', async () => {
    const page = await newPage(web.browser, web.s, PHONE)
    page.setDefaultTimeout(15_000)
    await signIn(page, web.s)
    await page.getByRole('button', { name: 'Menu' }).click()
    const links = page.getByRole('navigation', { name: 'Main' }).getByRole('link')
    const pages = await links.evaluateAll((as: any[]) =>
      as.map((a) => ({ label: String(a.textContent).trim(), href: String(a.getAttribute('href')) })),
    )
    // Every page of the menu is measured, those added later too.
    expect(pages.length).toBeGreaterThanOrEqual(8)
    // The folder permissions and groups are tabs of the Users page, with tables of their own.
    pages.push({ label: 'Folder permissions', href: '#/users/permissions' })
    pages.push({ label: 'Groups', href: '#/users/groups' })
    const seen: Record<string, Awaited<ReturnType<typeof layoutOf>>> = {}
    for (const p of pages) {
      await page.goto(`${web.s.url}/${p.href}`)
      await shown(page.getByRole('heading', { level: 1, name: p.label }))
      await (READY[p.label] ?? ((pg: Page) => pg.waitForLoadState('networkidle')))(page)
      if (p.href === '#/users/permissions' || p.href === '#/users/groups')
        await shown(page.locator('main tbody button').first())
      seen[p.href] = await layoutOf(page)
    }
    const misfits = Object.entries(seen).filter(
      ([, l]) =>
        l.width > PHONE.width ||
        [l.overflowing, l.cutOff, l.wrapped, l.overlapping].some((found) => found.length > 0),
    )
    expect(Object.fromEntries(misfits)).toEqual({})
    await page.context().close()
  })
})
