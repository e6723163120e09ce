import type { Page } from 'playwright-core'
import { bytes, uploaded } from '../../test/helpers/files.js'
import { call, type TestServer } from '../../test/helpers/server.js'

/**
 * Sharing for the documentation: entries selected on the Files page with a row's menu open, the
 * share dialog filled in, the link it made, and the Shares page listing the links.
 */
export async function shoot(ctx: { page: Page; s: TestServer; out(name: string): string }): Promise<void> {
  const { page, s, out } = ctx
  await call(s, 'POST', '/folders/Client%20uploads', { key: s.adminKey })
  await uploaded(s, 'Quarterly report.pdf', bytes(182_000, 1))
  await uploaded(s, 'Brochure draft.pdf', bytes(96_000, 2))
  await uploaded(s, 'meeting notes.txt', 'Agenda\n- Launch plan\n- Budget\n')
  await uploaded(s, 'photos.zip', bytes(640_000, 3))
  for (const [paths, more] of [
    [['Quarterly report.pdf'], { description: 'Q3 numbers for the board', max_uses: 20 }],
    [
      ['Client uploads'],
      { permissions: 'write', expires_at: new Date(Date.now() + 14 * 86_400_000).toISOString() },
    ],
    [['photos.zip', 'Brochure draft.pdf'], { password: 'press kit 2026', require_registration: true }],
  ] as const) {
    await call(s, 'POST', '/bundles', { key: s.adminKey, body: { paths, ...more } })
  }

  await page.goto(`${s.url}/#/files`)
  await page.reload()
  await page.getByRole('button', { name: 'Actions for meeting notes.txt' }).waitFor({ timeout: 15_000 })
  await page.getByLabel('Select Brochure draft.pdf').click()
  await page.getByLabel('Select photos.zip').click()
  await page.getByRole('button', { name: 'Actions for meeting notes.txt' }).click()
  await page.getByRole('menu').waitFor()
  await page.screenshot({ path: out('files-select'), fullPage: true })

  await page.keyboard.press('Escape')
  await page.getByRole('button', { name: 'Share selected' }).click()
  const dialog = page.getByRole('dialog', { name: 'Share 2 items' })
  await dialog.getByRole('radio', { name: 'Download and upload' }).check()
  await dialog.getByLabel('Maximum uses (optional)').fill('50')
  await dialog.getByLabel('Description shown to recipients (optional)').fill('The brochure and its photos')
  await page.screenshot({ path: out('share-dialog') })
  await dialog.getByRole('button', { name: 'Create link' }).click()
  await page.getByLabel('Share link').waitFor()
  await page.screenshot({ path: out('share-created') })
  await page.getByRole('button', { name: 'Done' }).click()

  await page.goto(`${s.url}/#/shares`)
  await page.locator('tbody tr[data-bundle-id]').nth(3).waitFor({ timeout: 15_000 })
  await page.getByText('Client uploads').waitFor({ timeout: 15_000 })
  await page.screenshot({ path: out('shares'), fullPage: true })
}
