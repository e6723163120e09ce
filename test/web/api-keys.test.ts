import type { Browser, Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
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
import { overflowing } from '../helpers/phone-layout.js'
import { makeKey, makeUser, type TestServer } from '../helpers/server.js'

/** A signed-in page whose every wait is bounded well inside the test's time. */
async function openAs(
  browser: Browser,
  s: TestServer,
  user?: { username: string; password: string },
  viewport?: { width: number; height: number },
) {
  const page = await newPage(browser, s, viewport)
  page.setDefaultTimeout(10_000)
  await signIn(page, s, user?.username, user?.password)
  await page.goto(`${s.url}/#/api-keys`)
  await shown(page.getByRole('heading', { level: 1, name: 'API keys' }))
  return page
}

/** GET /api_key with a key, as a program using it would. */
const withKey = (s: TestServer, key: string) =>
  fetch(`${s.api}/api_key`, { headers: { 'X-ServiceAPI-Key': key, Accept: 'application/json' } })

const adminId = async (s: TestServer) =>
  (
    await s.container.db
      .selectFrom('users')
      .select('id')
      .where('username', '=', 'admin')
      .executeTakeFirstOrThrow()
  ).id

const keyRow = (page: Page, name: string) =>
  page.locator('tbody tr').filter({ has: page.getByRole('cell', { name, exact: true }) })

describe.skipIf(!hasBrowser)('web interface: API keys', BROWSER_SUITE, () => {
  const web = webSuite()

  it('creates a key shown once, edits its expiry and permission set, and deletes it', async () => {
    const page = await openAs(web.browser, web.s)

    await page.getByLabel('Name', { exact: true }).fill('nightly backup')
    await page.getByLabel('Description (optional)').fill('pulls reports every night')
    await page.getByLabel('Expires on (optional)').fill('2031-05-17')
    await page.getByLabel('Permission set').selectOption('desktop_app')
    // The app sets say what they reach in Wharf, which has no share links.
    const options = await page.getByLabel('Permission set').locator('option').allTextContents()
    expect(options).toContain('Desktop app: files and folders only')
    expect(options.join(' ')).not.toContain('share links')
    expect(await textOf(page.getByTestId('permission-set-hint'))).toContain('Wharf has no share links yet.')
    await page.getByLabel('Only inside folder (optional)').fill('reports')
    await page.getByRole('button', { name: 'Create key' }).click()

    const shownKey = await textOf(page.getByTestId('new-key'))
    expect(shownKey).toMatch(/^[0-9a-f]{64}$/)
    expect(await textOf(page.locator('.new-key'))).toContain('it will not be shown again')
    // The key works: a program sending it is let in and sees its own settings.
    const r = await withKey(web.s, shownKey)
    expect(r.status).toBe(200)
    const own = (await r.json()) as Record<string, unknown>
    expect(own).toMatchObject({ name: 'nightly backup', permission_set: 'desktop_app', path: 'reports' })
    const row = await web.s.container.db
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', own['id'] as number)
      .executeTakeFirstOrThrow()
    expect(row).toMatchObject({
      name: 'nightly backup',
      description: 'pulls reports every night',
      permission_set: 'desktop_app',
      path: 'reports',
      user_id: await adminId(web.s),
    })
    expect(row.expires_at).toBe(new Date('2031-05-17T00:00').getTime())
    expect(await keyRow(page, 'nightly backup').count()).toBe(1)

    // Once dismissed, the key is gone from the page for good.
    await page.getByRole('button', { name: 'I have copied it' }).click()
    expect(await page.getByTestId('new-key').count()).toBe(0)
    expect(await page.content()).not.toContain(shownKey)

    // Edit: a later expiry and the full permission set.
    await keyRow(page, 'nightly backup').getByRole('button', { name: 'Edit nightly backup' }).click()
    const edit = page.getByRole('form', { name: 'Edit “nightly backup”' })
    await edit.getByLabel('Expires on (empty: never)').fill('2032-01-02')
    await edit.getByLabel('Permission set').selectOption('full')
    await edit.getByRole('button', { name: 'Save' }).click()
    await shown(page.getByText('Key “nightly backup” saved.'))
    const after = await (await withKey(web.s, shownKey)).json()
    expect(after).toMatchObject({
      permission_set: 'full',
      expires_at: new Date('2032-01-02T00:00').toISOString().replace('.000Z', 'Z'),
    })
    expect(await textOf(keyRow(page, 'nightly backup'))).toContain('full')

    // Delete asks first; keeping it changes nothing.
    await keyRow(page, 'nightly backup').getByRole('button', { name: 'Delete nightly backup' }).click()
    await page.getByRole('button', { name: 'Keep it' }).click()
    expect((await withKey(web.s, shownKey)).status).toBe(200)
    await keyRow(page, 'nightly backup').getByRole('button', { name: 'Delete nightly backup' }).click()
    await page
      .getByRole('group', { name: 'Delete “nightly backup”?' })
      .getByRole('button', { name: 'Yes, delete' })
      .click()
    await shown(page.getByText('Key “nightly backup” deleted'))
    await expect.poll(() => keyRow(page, 'nightly backup').count(), { timeout: 10_000 }).toBe(0)
    expect((await withKey(web.s, shownKey)).status).toBe(401)
    expect(
      await web.s.container.db
        .selectFrom('api_keys')
        .select('id')
        .where('id', '=', own['id'] as number)
        .execute(),
    ).toEqual([])
    expectNoOutsideRequests(page)
    await page.context().close()
  })

  it('lets a site admin make a site-wide key and a key for another user, and lists whose each is', async () => {
    const bob = await makeUser(web.s)
    const page = await openAs(web.browser, web.s)
    await page.getByLabel('Name', { exact: true }).fill('for bob')
    await page.getByLabel('Owner').selectOption({ label: bob.username })
    await page.getByRole('button', { name: 'Create key' }).click()
    const bobKey = await textOf(page.getByTestId('new-key'))
    const bobs = await (await withKey(web.s, bobKey)).json()
    expect(bobs).toMatchObject({ user_id: bob.id, name: 'for bob' })
    expect(await textOf(keyRow(page, 'for bob'))).toContain(bob.username)

    await page.getByLabel('Name', { exact: true }).fill('whole site')
    await page.getByLabel('Owner').selectOption('site-wide')
    expect(await page.getByLabel('Permission set').isDisabled()).toBe(true)
    await page.getByRole('button', { name: 'Create key' }).click()
    await shown(page.getByRole('heading', { name: 'Key “whole site” created' }))
    const siteKey = await textOf(page.getByTestId('new-key'))
    expect(await (await withKey(web.s, siteKey)).json()).toMatchObject({
      user_id: null,
      permission_set: 'full',
    })
    expect(await textOf(keyRow(page, 'whole site'))).toContain('Site-wide')
    await page.context().close()
  })

  it('shows the API’s refusals in words: a past expiry, and a Shared/Bot user’s list', async () => {
    const u = await makeUser(web.s)
    await makeKey(web.s, u.id, { name: 'old key' })
    const page = await openAs(web.browser, web.s, u, { width: 390, height: 844 })
    // A regular user sees their own keys only, and no choice of owner.
    await shown(keyRow(page, 'old key'))
    expect(await page.locator('tbody tr[data-key-id]').count()).toBe(1)
    expect(await page.getByLabel('Owner').count()).toBe(0)
    await page.getByLabel('Name', { exact: true }).fill('too late')
    await page.getByLabel('Expires on (optional)').fill('2001-01-01')
    await page.getByRole('button', { name: 'Create key' }).click()
    expect(await textOf(page.getByRole('alert'))).toContain('expires at must be in the future')
    expect(await page.getByTestId('new-key').count()).toBe(0)
    // The table scrolls inside its frame at phone width; the page itself does not.
    const wide = await overflowing(page)
    expect(wide).toEqual([])
    await page.context().close()

    const bot = await makeUser(web.s, { self_managed: false })
    const botPage = await openAs(web.browser, web.s, bot)
    expect(await textOf(botPage.getByRole('alert'))).toBe('Shared/Bot users cannot list or manage keys by id')
    await botPage.context().close()
  })
})
