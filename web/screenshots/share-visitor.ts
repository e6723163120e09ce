import { newPage } from '../../test/helpers/browser.js'
import { bytes, uploaded } from '../../test/helpers/files.js'
import { call } from '../../test/helpers/server.js'
import type { ShotContext } from './shot.js'

const PHONE = { width: 390, height: 844 }

/**
 * A share link's page, as its recipient sees it: the password and registration it asks for, then
 * a shared folder with a selection and a file sent, at desktop width and on a phone.
 */
export async function shoot({ page, s, out }: ShotContext): Promise<void> {
  await uploaded(s, 'Press kit/Brochure.pdf', bytes(96_000, 2))
  await uploaded(s, 'Press kit/Logo.png', bytes(12_800, 3))
  await uploaded(s, 'Press kit/Photos/Launch day.jpg', bytes(640_000, 4))
  await uploaded(s, 'Press kit/Fact sheet.txt', 'Founded 2019\nPeople: 42\n')
  const made = await call(s, 'POST', '/bundles', {
    key: s.adminKey,
    body: {
      paths: ['Press kit'],
      permissions: 'read_write',
      password: 'press kit 2026',
      require_registration: true,
      skip_company: true,
      description: 'Press kit for the launch',
    },
  })
  const url = `${s.url}/f/${made.body.code}`
  const browser = page.context().browser()!

  const desk = await newPage(browser, s)
  await desk.goto(url)
  await desk.getByLabel('Password').fill('press kit 2026')
  await desk.getByLabel('Your name').fill('Riley Reporter')
  await desk.getByLabel('Your e-mail address').fill('riley@news.example')
  await desk.screenshot({ path: out('share-visitor-unlock') })
  await desk.getByRole('button', { name: 'Open' }).click()
  await desk.getByRole('link', { name: 'Press kit (folder)' }).click()
  await desk.getByRole('cell', { name: 'Brochure.pdf', exact: true }).waitFor({ timeout: 15_000 })
  await desk
    .getByLabel('Choose files to upload')
    .setInputFiles([
      { name: 'Interview.txt', mimeType: 'text/plain', buffer: Buffer.from('Questions for the launch\n') },
    ])
  await desk.getByText('Complete').waitFor({ timeout: 15_000 })
  await desk.getByRole('link', { name: 'Riley Reporter (folder)' }).waitFor({ timeout: 15_000 })
  await desk.getByLabel('Select Brochure.pdf').check()
  await desk.getByLabel('Select Photos').check()
  await desk.screenshot({ path: out('share-visitor'), fullPage: true })
  await desk.context().close()

  const phone = await newPage(browser, s, PHONE)
  await phone.goto(url)
  await phone.getByLabel('Password').fill('press kit 2026')
  await phone.getByLabel('Your name').fill('Pat Phone')
  await phone.getByLabel('Your e-mail address').fill('pat@news.example')
  await phone.getByRole('button', { name: 'Open' }).click()
  await phone.getByRole('link', { name: 'Press kit (folder)' }).click()
  await phone.getByRole('cell', { name: 'Brochure.pdf', exact: true }).waitFor({ timeout: 15_000 })
  await phone.screenshot({ path: out('share-visitor-phone'), fullPage: true })
  await phone.context().close()
}
