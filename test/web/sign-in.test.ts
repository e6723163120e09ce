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
import { makeUser } from '../helpers/server.js'

describe.skipIf(!hasBrowser)('web interface: sign in and out', BROWSER_SUITE, () => {
  const web = webSuite({ LOGIN_DEFENDER_THRESHOLD: '100000' })

  it('signs in, shows the pages a site admin may use, and signs out', async () => {
    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s)
    const nav = page.getByRole('navigation', { name: 'Main' })
    for (const name of [
      'Files',
      'History',
      'Webhook logs',
      'Developer',
      'API keys',
      'Billing',
      'Apps',
      'Users',
    ]) {
      await shown(nav.getByRole('link', { name }))
    }
    // The session is the web interface's: its login is recorded with interface web.
    const login = await web.s.container.db
      .selectFrom('actions')
      .select('interface')
      .where('action', '=', 'login')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow()
    expect(login.interface).toBe('web')

    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('button', { name: 'Sign in' }).waitFor()
    expect(await web.s.container.db.selectFrom('sessions').select('id_hash').execute()).toEqual([])
    expectNoOutsideRequests(page)
    await page.context().close()
  })

  it('hides the site-admin pages from other users', async () => {
    const u = await makeUser(web.s)
    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s, u.username, u.password)
    const nav = page.getByRole('navigation', { name: 'Main' })
    await shown(nav.getByRole('link', { name: 'Files' }))
    for (const name of ['Webhook logs', 'Developer', 'Billing', 'Users']) {
      expect(await nav.getByRole('link', { name }).count()).toBe(0)
    }
    await page.context().close()
  })

  it('starts every sign-in at Files, and a late refusal of the previous session signs nobody out', async () => {
    const u = await makeUser(web.s)
    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s)
    // The admin's list of users is held until the next user has signed in.
    let release = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    await page.route(
      (url) => url.pathname === '/api/rest/v1/users',
      async (route) => {
        await held
        await route.continue()
      },
    )
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Users' }).click()
    await shown(page.getByRole('heading', { level: 1, name: 'Users' }))
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('button', { name: 'Sign in' }).waitFor()
    await page.getByLabel('Username', { exact: true }).fill(u.username)
    await page.getByLabel('Password', { exact: true }).fill(u.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await shown(page.getByRole('heading', { level: 1, name: 'Files' }))
    expect(new URL(page.url()).hash).toBe('#/files')
    expect(await page.getByText('Only site administrators can use this page.').count()).toBe(0)

    // The admin's request now reaches the server after their sign-out: 401, for that session only.
    const finished = page.waitForEvent(
      'requestfinished',
      (r) => new URL(r.url()).pathname === '/api/rest/v1/users',
    )
    release()
    expect((await (await finished).response())?.status()).toBe(401)
    // Whatever the page does with that answer, it has done once its tasks have run.
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 0)))
    expect(
      await page.evaluate(() => (globalThis as any).sessionStorage.getItem('wharf.session')),
    ).not.toBeNull()
    await shown(page.getByRole('button', { name: 'Sign out' }))
    await page.context().close()
  })

  it('says in words why a sign-in failed: wrong password, then locked out', async () => {
    const u = await makeUser(web.s)
    const page = await newPage(web.browser, web.s)
    await page.goto(`${web.s.url}/`)
    for (let i = 0; i < 5; i++) {
      await page.getByLabel('Username').fill(u.username)
      await page.getByLabel('Password').fill('not-the-password')
      await page.getByRole('button', { name: 'Sign in' }).click()
      expect(await textOf(page.getByRole('alert'))).toBe('Wrong username or password.')
      await page.getByRole('button', { name: 'Sign in' }).waitFor()
    }
    await page.getByLabel('Username').fill(u.username)
    await page.getByLabel('Password').fill(u.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await expect
      .poll(() => page.getByRole('alert').innerText())
      .toContain('locked after too many failed sign-ins')
    await page.context().close()
  })

  it('works at phone width behind a menu button', async () => {
    const page = await newPage(web.browser, web.s, { width: 390, height: 844 })
    await signIn(page, web.s)
    const nav = page.getByRole('navigation', { name: 'Main' })
    expect(await nav.isVisible()).toBe(false)
    await page.getByRole('button', { name: 'Menu' }).click()
    await nav.getByRole('link', { name: 'History' }).click()
    await shown(page.getByRole('heading', { level: 1, name: 'History' }))
    await page.context().close()
  })
})
