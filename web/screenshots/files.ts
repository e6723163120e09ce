import type { Page } from 'playwright-core'
import { bytes, uploaded } from '../../test/helpers/files.js'
import { call, type TestServer } from '../../test/helpers/server.js'

/**
 * The Files page for the documentation: a folder with subfolders and files, then uploads done
 * through the page (one in several parts) with their progress bars.
 */
export async function shoot(ctx: { page: Page; s: TestServer; out(name: string): string }): Promise<void> {
  const { page, s, out } = ctx
  for (const folder of ['Projects', 'Invoices 2026', 'Photos/Summer']) {
    await call(s, 'POST', `/folders/${encodeURIComponent(folder)}`, {
      key: s.adminKey,
      body: { mkdir_parents: true },
    })
  }
  await uploaded(s, 'Quarterly report.pdf', bytes(182_000, 1))
  await uploaded(s, 'budget-2026.xlsx', bytes(46_500, 2))
  await uploaded(s, 'meeting notes.txt', 'Agenda\n- Launch plan\n- Budget\n')
  await uploaded(s, 'logo.png', bytes(12_800, 3))

  // A reload: the page may already show the (then empty) root from signing in.
  await page.goto(`${s.url}/#/files`)
  await page.reload()
  await page.getByRole('cell', { name: 'Quarterly report.pdf', exact: true }).waitFor({ timeout: 15_000 })
  await page.screenshot({ path: out('files'), fullPage: true })

  await page.goto(`${s.url}/#/files/Projects`)
  await page.getByLabel('Choose files to upload').waitFor({ timeout: 15_000 })
  await page.getByLabel('Choose files to upload').setInputFiles([
    { name: 'site-plan.pdf', mimeType: 'application/pdf', buffer: bytes(3 * 1024 * 1024, 4) },
    { name: 'contract draft.docx', mimeType: 'application/octet-stream', buffer: bytes(220_000, 5) },
    { name: 'readme.txt', mimeType: 'text/plain', buffer: Buffer.from('Project files\n') },
  ])
  for (const name of ['site-plan.pdf', 'contract draft.docx', 'readme.txt']) {
    const bar = page.getByLabel(`Upload progress of ${name}`, { exact: true })
    for (let i = 0; i < 150 && (await bar.getAttribute('value')) !== '100'; i++)
      await page.waitForTimeout(100)
  }
  await page.getByRole('cell', { name: 'site-plan.pdf', exact: true }).waitFor({ timeout: 15_000 })
  await page.screenshot({ path: out('files-upload'), fullPage: true })
}
