import type { Page } from 'playwright-core'
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
import { cutOff, overflowing } from '../helpers/phone-layout.js'
import { call, grant, makeUser } from '../helpers/server.js'

describe.skipIf(!hasBrowser)('web interface: folder settings', BROWSER_SUITE, () => {
  const web = webSuite({ LOGIN_DEFENDER_THRESHOLD: '100000' })

  async function freshPage(viewport?: { width: number; height: number }): Promise<Page> {
    const page = await newPage(web.browser, web.s, viewport)
    page.setDefaultTimeout(10_000)
    return page
  }

  async function openFolder(page: Page, folder: string) {
    await page.goto(`${web.s.url}/#/files/${folder.split('/').map(encodeURIComponent).join('/')}`)
    await shown(page.getByRole('heading', { level: 1, name: 'Files' }))
  }

  async function openSettings(page: Page, name: string) {
    await page.getByRole('button', { name: 'Folder settings' }).click()
    const dialog = page.getByRole('dialog', { name: `Folder settings: ${name}` })
    await shown(dialog)
    return dialog
  }

  const behaviorsOn = async (path: string) =>
    (await call(web.s, 'GET', `/behaviors/folders/${path}`, { key: web.s.adminKey })).body as {
      id: number
      behavior: string
      name: string | null
      value: Record<string, unknown>
      recursive: boolean
    }[]

  const create = async (body: Record<string, unknown>) => {
    const r = await call(web.s, 'POST', '/behaviors', { key: web.s.adminKey, body })
    expect(r.status).toBe(201)
    return r.body.id as number
  }

  it('adds, edits and removes a folder’s settings, shows a refusal beside its field and the inherited ones with their folder', async () => {
    await call(web.s, 'POST', '/folders/Projects/Q1', { key: web.s.adminKey })
    await create({
      path: 'Projects',
      behavior: 'limit_filename_length',
      name: 'Short names',
      value: { max_length: 60 },
      recursive: true,
    })
    const page = await freshPage()
    await signIn(page, web.s)
    await openFolder(page, 'Projects/Q1')
    const dialog = await openSettings(page, 'Q1')

    // The inherited behavior, with the folder it is on; none of Q1's own yet.
    const inherited = dialog.getByRole('list', { name: 'Inherited from folders above' }).getByRole('listitem')
    await shown(inherited)
    expect(await inherited.count()).toBe(1)
    expect(await inherited.first().innerText()).toContain('Short names')
    expect(await inherited.first().innerText()).toContain('From /Projects')
    expect(await inherited.first().innerText()).toContain('max length: 60')
    expect(await inherited.first().getByRole('button').count()).toBe(0)
    expect(
      await dialog.getByRole('list', { name: 'Settings of this folder' }).getByRole('listitem').count(),
    ).toBe(0)

    // Add: a length out of range is refused, said beside the field, then fixed.
    await dialog.getByRole('button', { name: 'Add a setting' }).click()
    await dialog.getByLabel('Setting type').selectOption('limit_filename_length')
    const max = dialog.getByLabel('Maximum length')
    await max.fill('999')
    await dialog.getByLabel('Name (optional)').fill('Q1 names')
    await dialog.getByRole('button', { name: 'Add', exact: true }).click()
    const fieldError = dialog.locator('#fs-err-max_length')
    expect(await textOf(fieldError)).toBe('must be a whole number from 1 to 255')
    expect(await max.getAttribute('aria-invalid')).toBe('true')
    expect((await max.getAttribute('aria-describedby'))?.split(' ')).toContain('fs-err-max_length')
    expect(await textOf(dialog.getByRole('alert'))).toBe('Not saved: see the marked fields.')
    expect(await behaviorsOn('Projects/Q1')).toEqual([])
    await max.fill('40')
    await dialog.getByRole('button', { name: 'Add', exact: true }).click()
    expect(await textOf(dialog.getByRole('status'))).toBe('Added “Q1 names”')
    const own = dialog.getByRole('list', { name: 'Settings of this folder' }).getByRole('listitem')
    await shown(own)
    expect(await own.first().innerText()).toContain('max length: 40')
    const [made] = await behaviorsOn('Projects/Q1')
    expect(made).toMatchObject({
      behavior: 'limit_filename_length',
      name: 'Q1 names',
      value: { max_length: 40 },
    })

    // A second one: extensions, with its own form.
    await dialog.getByRole('button', { name: 'Add a setting' }).click()
    await dialog.getByLabel('Setting type').selectOption('limit_file_extensions')
    await dialog.getByLabel('Extensions').fill('csv, .pdf')
    await dialog.getByLabel('Mode').selectOption('deny')
    await dialog.getByLabel('Also apply to every folder inside this one').check()
    await dialog.getByRole('button', { name: 'Add', exact: true }).click()
    expect(await textOf(dialog.getByRole('status'))).toBe('Added “Allowed or refused file extensions”')
    const ext = (await behaviorsOn('Projects/Q1')).find((b) => b.behavior === 'limit_file_extensions')
    expect(ext).toMatchObject({ value: { extensions: ['csv', 'pdf'], mode: 'deny' }, recursive: true })

    // Edit: the form shows the stored value; the type cannot change.
    await dialog.getByRole('button', { name: 'Edit Allowed or refused file extensions' }).click()
    expect(await dialog.getByLabel('Extensions').inputValue()).toBe('csv, pdf')
    expect(await dialog.getByLabel('Mode').inputValue()).toBe('deny')
    expect(await dialog.getByLabel('Setting type').isDisabled()).toBe(true)
    await dialog.getByLabel('Extensions').fill('')
    await dialog.getByRole('button', { name: 'Save' }).click()
    expect(await textOf(dialog.locator('#fs-err-extensions'))).toMatch(/extension/)
    await dialog.getByLabel('Extensions').fill('txt')
    await dialog.getByLabel('Mode').selectOption('allow')
    await dialog.getByRole('button', { name: 'Save' }).click()
    expect(await textOf(dialog.getByRole('status'))).toBe('Saved “Allowed or refused file extensions”')
    const edited = (await behaviorsOn('Projects/Q1')).find((b) => b.id === ext?.id)
    expect(edited?.value).toEqual({ extensions: ['txt'], mode: 'allow' })

    // Remove, after confirming; "Keep it" first keeps it.
    await dialog.getByRole('button', { name: 'Remove Q1 names' }).click()
    await dialog.getByRole('button', { name: 'Keep it' }).click()
    expect((await behaviorsOn('Projects/Q1')).length).toBe(2)
    await dialog.getByRole('button', { name: 'Remove Q1 names' }).click()
    await dialog.getByRole('button', { name: 'Remove', exact: true }).click()
    expect(await textOf(dialog.getByRole('status'))).toBe('Removed “Q1 names”')
    expect((await behaviorsOn('Projects/Q1')).map((b) => b.id)).toEqual([ext?.id])
    await expect.poll(() => own.count()).toBe(1)

    // The parent folder lists its own behavior as its own.
    await dialog.getByRole('button', { name: 'Close' }).click()
    await openFolder(page, 'Projects')
    const parent = await openSettings(page, 'Projects')
    const parentOwn = parent.getByRole('list', { name: 'Settings of this folder' }).getByRole('listitem')
    await shown(parentOwn)
    expect(await parentOwn.first().innerText()).toContain('Short names')
    // The root folder has settings too (site-wide ones); here it has none, and inherits none.
    await parent.getByRole('button', { name: 'Close' }).click()
    await openFolder(page, '')
    const root = await openSettings(page, 'All files')
    await shown(root.getByRole('heading', { name: 'Inherited from folders above' }))
    expect(await root.getByText('None.').count()).toBe(2)
    expectNoOutsideRequests(page)
  })

  it('keeps settings the form does not know as JSON, and sends a webhook test with the form’s values', async () => {
    await call(web.s, 'POST', '/folders/Kept', { key: web.s.adminKey })
    // A value with a setting this interface has no field for, as a newer server might store.
    await web.s.container.db
      .insertInto('behaviors')
      .values({
        site_id: web.s.container.site.id,
        path: 'Kept',
        path_lower: 'kept',
        behavior: 'limit_filename_length',
        value: JSON.stringify({ max_length: 30, future_setting: { on: true } }),
        name: null,
        description: null,
        recursive: 0,
        disable_parent_folder_behavior: 0,
        created_at: Date.now(),
        updated_at: Date.now(),
      })
      .execute()
    const page = await freshPage()
    await signIn(page, web.s)
    await openFolder(page, 'Kept')
    const dialog = await openSettings(page, 'Kept')
    await dialog.getByRole('button', { name: 'Edit File name length' }).click()
    expect(await dialog.getByLabel('Maximum length').inputValue()).toBe('30')
    expect(JSON.parse(await dialog.getByLabel('Other settings (JSON)').inputValue())).toEqual({
      future_setting: { on: true },
    })
    // Sent back as it is, the server names the setting it does not have, beside the JSON.
    await dialog.getByRole('button', { name: 'Save' }).click()
    expect(await textOf(dialog.locator('#fs-err-value'))).toMatch(
      /^future_setting is not a setting of limit_filename_length/,
    )
    expect(await dialog.getByLabel('Other settings (JSON)').getAttribute('aria-invalid')).toBe('true')
    await dialog.getByLabel('Other settings (JSON)').fill('{not json')
    await dialog.getByRole('button', { name: 'Save' }).click()
    expect(await textOf(dialog.locator('#fs-err-value'))).toMatch(/JSON/)
    await dialog.getByLabel('Other settings (JSON)').fill('')
    await dialog.getByRole('button', { name: 'Save' }).click()
    expect(await textOf(dialog.getByRole('status'))).toBe('Saved “File name length”')
    expect((await behaviorsOn('Kept'))[0]?.value).toEqual({ max_length: 30 })

    // Webhook: every setting has a field; Send test posts the form's request and shows the answer.
    await dialog.getByRole('button', { name: 'Add a setting' }).click()
    await dialog.getByLabel('Setting type').selectOption('webhook')
    for (const label of [
      'URLs',
      'Method',
      'Triggers',
      'Only file names matching',
      'Except file names matching',
      'Encoding',
      'Headers',
      'Body fields',
      'Verification token',
    ])
      await shown(dialog.getByLabel(label, { exact: true }))
    await dialog.getByLabel('URLs').fill('https://hooks.example.com/in\nhttps://hooks.example.com/other')
    await dialog.getByLabel('Method').selectOption('GET')
    await dialog.getByLabel('Encoding').selectOption('XML')
    await dialog.getByLabel('Headers', { exact: true }).fill('X-Token: abc')
    await dialog.getByLabel('Body fields').fill('team: ops')
    const sent = page.waitForRequest((r) => r.url().endsWith('/api/rest/v1/behaviors/webhook/test'))
    await dialog.getByRole('button', { name: 'Send test' }).click()
    expect((await sent).postDataJSON()).toEqual({
      url: 'https://hooks.example.com/in',
      method: 'GET',
      encoding: 'XML',
      headers: { 'X-Token': 'abc' },
      body: { team: 'ops' },
    })
    // Whatever the server answers (a result, or an error such as 404 where it has no test), it is shown.
    await shown(dialog.locator('.behavior-test [role="status"], .behavior-test [role="alert"]'))
    // The server refuses webhook behaviors it does not deliver, or takes them: either is said.
    await dialog.getByRole('button', { name: 'Add', exact: true }).click()
    await shown(dialog.locator('#fs-err-behavior, [role="status"]'))
    expectNoOutsideRequests(page)
  })

  it('is offered to folder admins inside their folders only, and works with the keyboard', async () => {
    await call(web.s, 'POST', '/folders/Team/Docs', { key: web.s.adminKey })
    await call(web.s, 'POST', '/folders/Other', { key: web.s.adminKey })
    const boss = await makeUser(web.s)
    await grant(web.s, boss.id, 'Team', 'admin')
    await grant(web.s, boss.id, 'Other', 'full')
    const page = await freshPage()
    await signIn(page, web.s, boss.username, boss.password)
    // The page asks the server whether the user may manage the folder's settings: here not.
    const asked = page.waitForResponse((r) => r.url().includes('/api/rest/v1/behaviors/folders/Other'))
    await openFolder(page, 'Other')
    expect((await asked).status()).toBe(403)
    await shown(page.getByText('This folder is empty.'))
    expect(await page.getByRole('button', { name: 'Folder settings' }).count()).toBe(0)

    await openFolder(page, 'Team/Docs')
    const button = page.getByRole('button', { name: 'Folder settings' })
    await shown(button)
    await button.focus()
    await page.keyboard.press('Enter')
    const dialog = page.getByRole('dialog', { name: 'Folder settings: Docs' })
    await shown(dialog)
    await dialog.getByRole('button', { name: 'Add a setting' }).focus()
    await page.keyboard.press('Enter')
    await dialog.getByLabel('Setting type').focus()
    await page.keyboard.press('Tab')
    await page.keyboard.type('csv')
    await page.keyboard.press('Enter') // submits the form
    expect(await textOf(dialog.getByRole('status'))).toBe('Added “Allowed or refused file extensions”')
    expect((await behaviorsOn('Team/Docs'))[0]?.value).toEqual({ extensions: ['csv'], mode: 'allow' })
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'detached' })
    expect(await page.evaluate(() => (globalThis as any).document.activeElement?.textContent)).toBe(
      'Folder settings',
    )

    // A user who administers no folder is not offered it.
    const plain = await makeUser(web.s)
    await grant(web.s, plain.id, 'Other', 'full')
    const other = await freshPage()
    await signIn(other, web.s, plain.username, plain.password)
    const refused = other.waitForResponse((r) => r.url().includes('/api/rest/v1/behaviors/folders/Other'))
    await openFolder(other, 'Other')
    expect((await refused).status()).toBe(403)
    await shown(other.getByText('This folder is empty.'))
    expect(await other.getByRole('button', { name: 'Folder settings' }).count()).toBe(0)
  })

  it('fits a phone screen: the list and the form inside the dialog', async () => {
    await call(web.s, 'POST', '/folders/Phone/Inside', { key: web.s.adminKey })
    await create({
      path: 'Phone',
      behavior: 'limit_file_regex',
      name: 'Reports named by the quarterly reporting convention of the finance team',
      value: { regex: '^[A-Z]{3}-\\d+\\.(csv|pdf)$' },
      recursive: true,
    })
    const page = await freshPage({ width: 390, height: 844 })
    await signIn(page, web.s)
    await openFolder(page, 'Phone/Inside')
    const dialog = await openSettings(page, 'Inside')
    await shown(dialog.getByText('From /Phone'))
    expect(await overflowing(page)).toEqual([])
    expect(await cutOff(page, '.settings-dialog button, .settings-dialog li', '.settings-dialog')).toEqual([])
    await dialog.getByRole('button', { name: 'Add a setting' }).click()
    await dialog.getByLabel('Setting type').selectOption('limit_file_regex')
    await dialog.getByLabel('Regular expression').fill('(a+)+')
    await dialog.getByRole('button', { name: 'Add', exact: true }).click()
    await shown(dialog.locator('#fs-err-regex'))
    expect(await overflowing(page)).toEqual([])
    expect(
      await cutOff(
        page,
        '.settings-dialog input, .settings-dialog select, .settings-dialog textarea, .settings-dialog button, .field-error',
        '.settings-dialog',
      ),
    ).toEqual([])
    expectNoOutsideRequests(page)
  })
})
