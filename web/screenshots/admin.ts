import type { Page } from 'playwright-core'
import { recordAt } from '../../test/helpers/history-export-fixtures.js'
import { call, grant, makeKey, makeUser, type TestServer } from '../../test/helpers/server.js'

/** What the screenshot runner hands each module: a site admin's signed-in page, 1280×800. */
interface ShotContext {
  page: Page
  s: TestServer
  out(name: string): string
}

const MIN = 60_000

/** The history page with a working day's actions, the API keys list, and a just-created key. */
export async function shoot({ page, s, out }: ShotContext): Promise<void> {
  const alice = await makeUser(s, { username: 'alice' })
  const bob = await makeUser(s, { username: 'bob' })
  await grant(s, alice.id, 'projects', 'full')
  await grant(s, bob.id, 'reports', 'readonly')
  const aliceKey = await makeKey(s, alice.id, {
    name: 'laptop sync',
    permission_set: 'sync_app',
    expires_at: '2027-06-30',
  })
  await makeKey(s, bob.id, { name: 'report fetcher', path: 'reports', permission_set: 'desktop_app' })
  await makeKey(s, null, { name: 'backup server' })
  for (const folder of ['projects', 'reports', 'projects/harbour'])
    await call(s, 'POST', `/folders/${folder}`, { key: s.adminKey })
  await call(s, 'POST', '/folders/projects/harbour/drawings', { key: aliceKey.key })
  const who = {
    alice: { user: alice, ip: '192.0.2.14', interface: 'web' },
    bob: { user: bob, ip: '198.51.100.23', interface: 'sftp' },
  }
  await recordAt(
    s,
    95 * MIN,
    {
      action: 'create',
      display: 'Uploaded site-plan.pdf',
      path: 'projects/harbour/site-plan.pdf',
      targets: [{ type: 'file', id: 11, name: 'site-plan.pdf' }],
    },
    who.alice,
  )
  await recordAt(
    s,
    80 * MIN,
    {
      action: 'move',
      display: 'Moved site-plan.pdf to projects/harbour/drawings',
      path: 'projects/harbour/drawings/site-plan.pdf',
      source: 'projects/harbour/site-plan.pdf',
      destination: 'projects/harbour/drawings/site-plan.pdf',
      targets: [{ type: 'file', id: 11, name: 'site-plan.pdf' }],
    },
    who.alice,
  )
  await recordAt(
    s,
    42 * MIN,
    {
      action: 'read',
      display: 'Downloaded q3-summary.xlsx',
      path: 'reports/q3-summary.xlsx',
      targets: [{ type: 'file', id: 12, name: 'q3-summary.xlsx' }],
    },
    who.bob,
  )
  await recordAt(
    s,
    20 * MIN,
    { action: 'failedlogin', display: 'Failed login for bob', failureType: 'password_mismatch' },
    {
      ip: '203.0.113.50',
    },
  )

  await page.goto(`${s.url}/#/history`)
  await page.locator('tbody tr[data-action-id]').first().waitFor()
  await page.screenshot({ path: out('history'), fullPage: true })

  await page.goto(`${s.url}/#/api-keys`)
  await page.locator('tbody tr[data-key-id]').first().waitFor()
  await page.screenshot({ path: out('api-keys'), fullPage: true })

  await page.getByLabel('Name', { exact: true }).fill('invoice importer')
  await page.getByLabel('Description (optional)').fill('Reads new invoices every hour')
  await page.getByLabel('Expires on (optional)').fill('2027-12-31')
  await page.getByLabel('Only inside folder (optional)').fill('reports')
  await page.getByRole('button', { name: 'Create key' }).click()
  await page.getByTestId('new-key').waitFor()
  await page.screenshot({ path: out('api-key-created'), fullPage: true })
}
