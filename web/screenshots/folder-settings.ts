import { call } from '../../test/helpers/server.js'
import type { ShotContext } from './shot.js'

/** The Folder settings dialog of a subfolder: its own rule and one inherited from the folder above. */
export async function shoot({ page, s, out }: ShotContext): Promise<void> {
  await call(s, 'POST', '/folders/Partners/Acme', { key: s.adminKey, body: { mkdir_parents: true } })
  const add = (body: Record<string, unknown>) => call(s, 'POST', '/behaviors', { key: s.adminKey, body })
  await add({
    path: 'Partners',
    behavior: 'limit_filename_length',
    name: 'Short names',
    value: { max_length: 80 },
    recursive: true,
  })
  await add({
    path: 'Partners/Acme',
    behavior: 'limit_file_extensions',
    name: 'Reports only',
    description: 'Acme sends its monthly reports here.',
    value: { extensions: ['csv', 'pdf'], mode: 'allow' },
  })
  await page.goto(`${s.url}/#/files/Partners/Acme`)
  await page.getByRole('button', { name: 'Folder settings' }).click()
  const dialog = page.getByRole('dialog', { name: 'Folder settings: Acme' })
  await dialog.getByText('From /Partners').waitFor({ timeout: 15_000 })
  await page.screenshot({ path: out('folder-settings') })

  await dialog.getByRole('button', { name: 'Add a setting' }).click()
  await dialog.getByLabel('Setting type').selectOption('limit_file_regex')
  await dialog.getByLabel('Regular expression').fill('(a+)+')
  await dialog.getByRole('button', { name: 'Add', exact: true }).click()
  await dialog.locator('#fs-err-regex').waitFor({ timeout: 15_000 })
  await page.screenshot({ path: out('folder-settings-form') })
}
