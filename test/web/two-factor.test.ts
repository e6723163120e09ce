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
import { codeAt } from '../helpers/totp.js'

describe.skipIf(!hasBrowser)('web interface: two-factor sign-in', BROWSER_SUITE, () => {
  const web = webSuite({ LOGIN_DEFENDER_THRESHOLD: '100000' })

  /** Enrols on the Two-factor sign-in page: the authenticator's URI and the recovery codes shown. */
  async function enrol(page: import('playwright-core').Page) {
    const created = page.waitForResponse(
      (r) => r.url().endsWith('/two_factor_authentication_methods') && r.request().method() === 'POST',
    )
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click()
    const uri: string = (await (await created).json()).otpauth_uri
    // The QR code is drawn in the page (a data: URL), and the key is shown for typing by hand.
    const qr = page.getByRole('img', { name: "QR code of the authenticator's secret" })
    await shown(qr)
    expect(await qr.getAttribute('src')).toMatch(/^data:image\/png;base64,/)
    expect(await textOf(page.getByTestId('totp-secret'))).toBe(new URL(uri).searchParams.get('secret'))
    // A wrong code first: refused, and the session stays.
    const wrong = codeAt(uri, Date.now()) === '000000' ? '111111' : '000000'
    await page.getByLabel('Code from the app').fill(wrong)
    await page.getByRole('button', { name: 'Confirm' }).click()
    await shown(
      page.getByRole('alert').filter({ hasText: 'The code is not the one the authenticator shows' }),
    )
    // The previous step's code is still in the window: the current one stays unused for sign-in.
    await page.getByLabel('Code from the app').fill(codeAt(uri, Date.now() - 30_000))
    await page.getByRole('button', { name: 'Confirm' }).click()
    const codes = page.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem')
    await shown(codes)
    expect(await codes.count()).toBe(10)
    await page.getByRole('button', { name: 'Done' }).click()
    return uri
  }

  it('enrols an authenticator from its QR code page, then signs in with a code', async () => {
    const u = await makeUser(web.s)
    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s, u.username, u.password)
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Two-factor sign-in' })
      .click()
    const uri = await enrol(page)
    await shown(page.getByRole('list', { name: 'Your authenticators' }).getByRole('listitem'))
    await page.getByRole('button', { name: 'Sign out' }).click()

    await page.getByLabel('Username').fill(u.username)
    await page.getByLabel('Password').fill(u.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    const wrong = codeAt(uri, Date.now()) === '123456' ? '654321' : '123456'
    await page.getByLabel('Authentication code').fill(wrong)
    await page.getByRole('button', { name: 'Verify' }).click()
    expect(await textOf(page.getByRole('alert'))).toContain('Wrong code')
    await page.getByLabel('Authentication code').fill(codeAt(uri, Date.now()))
    await page.getByRole('button', { name: 'Verify' }).click()
    await page.getByRole('button', { name: 'Sign out' }).waitFor()
    await shown(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Files' }))
    const failed = await web.s.container.db
      .selectFrom('actions')
      .select(['failure_type', 'interface'])
      .where('action', '=', 'failedlogin')
      .where('username', '=', u.username)
      .execute()
    expect(failed).toEqual([{ failure_type: 'password_mismatch', interface: 'web' }])
    expectNoOutsideRequests(page)
    await page.context().close()
  })

  it('shows a user who must use two-factor sign-in only the enrolment until it is done', async () => {
    const u = await makeUser(web.s)
    await call(web.s, 'PATCH', `/users/${u.id}`, {
      key: web.s.adminKey,
      body: { require_2fa: 'always_require' },
    })
    const page = await newPage(web.browser, web.s)
    await signIn(page, web.s, u.username, u.password)
    expect(await textOf(page.getByRole('alert'))).toContain('must sign in with a second factor')
    expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(0)
    await enrol(page)
    await shown(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Files' }))
    expectNoOutsideRequests(page)
    await page.context().close()
  })
})
