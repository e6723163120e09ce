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
import { call, makeUser } from '../helpers/server.js'

describe.skipIf(!hasBrowser)('web interface: a password change required', BROWSER_SUITE, () => {
  const web = webSuite()

  it('shows only the change screen after sign-in, refuses a bad password, then opens the interface', async () => {
    const u = await makeUser(web.s)
    const r = await call(web.s, 'PATCH', `/users/${u.id}`, {
      key: web.s.adminKey,
      body: { require_password_change: true },
    })
    expect(r.status).toBe(200)
    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s, u.username, u.password)
    await shown(page.getByRole('heading', { name: 'Change your password' }))
    expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(0)

    await page.getByLabel('Current password').fill(u.password)
    await page.getByLabel('New password', { exact: true }).fill('short')
    await page.getByLabel('New password again').fill('short')
    await page.getByRole('button', { name: 'Change password' }).click()
    expect(await textOf(page.getByRole('alert'))).toContain('password is too short (minimum is 8 characters)')

    await page.getByLabel('New password', { exact: true }).fill('my-own-choice-42')
    await page.getByLabel('New password again').fill('my-own-choice-42')
    await page.getByRole('button', { name: 'Change password' }).click()
    await shown(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Files' }))
    const row = await web.s.container.db
      .selectFrom('users')
      .select('require_password_change')
      .where('id', '=', u.id)
      .executeTakeFirstOrThrow()
    expect(row.require_password_change).toBe(0)
    expect(
      (
        await call(web.s, 'POST', '/sessions', {
          body: { username: u.username, password: 'my-own-choice-42' },
        })
      ).status,
    ).toBe(201)
    expectNoOutsideRequests(page)
    await page.context().close()
  })

  it('lets a site admin ask for a new password from the user form', async () => {
    const u = await makeUser(web.s)
    const admin = await newPage(web.browser, web.s)
    await signIn(admin, web.s)
    await admin.goto(`${web.s.url}/#/users`)
    const row = admin
      .getByRole('row')
      .filter({ has: admin.getByRole('rowheader', { name: u.username, exact: true }) })
    await row.getByRole('button', { name: `Edit ${u.username}` }).click()
    const edit = admin.getByRole('form', { name: `Edit ${u.username}` })
    await edit.getByLabel('Must change the password at the next sign-in').check()
    await edit.getByRole('button', { name: 'Save changes' }).click()
    await shown(admin.getByRole('status').filter({ hasText: 'saved' }))
    const flagged = await web.s.container.db
      .selectFrom('users')
      .select('require_password_change')
      .where('id', '=', u.id)
      .executeTakeFirstOrThrow()
    expect(flagged.require_password_change).toBe(1)
    await admin.context().close()

    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s, u.username, u.password)
    await shown(page.getByRole('heading', { name: 'Change your password' }))
    await page.context().close()
  })

  it('says when the password has expired', async () => {
    const u = await makeUser(web.s)
    await call(web.s, 'PATCH', `/users/${u.id}`, { key: web.s.adminKey, body: { password_validity_days: 1 } })
    await web.s.container.db
      .updateTable('users')
      .set({ password_set_at: Date.now() - 2 * 86_400_000 })
      .where('id', '=', u.id)
      .execute()
    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s, u.username, u.password)
    expect(await textOf(page.getByText('has expired'))).toContain(
      `The password of ${u.username} has expired.`,
    )
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('button', { name: 'Sign in' }).waitFor()
    await page.context().close()
  })
})
