import type { ShotContext } from './shot.js'

/** The sign-in form with the error a wrong password gets, and the interface at phone width. */
export async function shoot({ page, s, out }: ShotContext): Promise<void> {
  const context = await page
    .context()
    .browser()!
    .newContext({ viewport: { width: 1280, height: 800 } })
  const fresh = await context.newPage()
  await fresh.goto(`${s.url}/`)
  await fresh.getByLabel('Username').fill('admin')
  await fresh.getByLabel('Password').fill('not-the-password')
  await fresh.getByRole('button', { name: 'Sign in' }).click()
  await fresh.getByRole('alert').waitFor()
  await fresh.screenshot({ path: out('sign-in'), fullPage: true })
  await context.close()

  await page.setViewportSize({ width: 390, height: 844 })
  await page.goto(`${s.url}/#/files`)
  await page.getByRole('button', { name: 'Menu' }).click()
  await page.getByRole('navigation', { name: 'Main' }).waitFor()
  await page.screenshot({ path: out('phone-menu') })
  await page.setViewportSize({ width: 1280, height: 800 })
}
