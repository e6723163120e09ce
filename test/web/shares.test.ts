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
import { uploaded } from '../helpers/files.js'
import { rowAction, rowActions } from '../helpers/files-page.js'
import { call, grant, login, makeUser } from '../helpers/server.js'

const PHONE = { width: 390, height: 844 }

describe.skipIf(!hasBrowser)('web interface: share links', BROWSER_SUITE, () => {
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
  async function openShares(page: Page) {
    // At phone width the navigation is behind its Menu button.
    const menu = page.getByRole('button', { name: 'Menu' })
    if (await menu.isVisible()) await menu.click()
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Shares' }).click()
    await shown(page.getByRole('heading', { level: 1, name: 'Shares' }))
  }
  const adminBundles = async () =>
    (await call(web.s, 'GET', '/bundles', { key: web.s.adminKey })).body as Array<Record<string, any>>
  const bundle = async (id: number) => call(web.s, 'GET', `/bundles/${id}`, { key: web.s.adminKey })
  /** A `datetime-local` value a day ahead, and the instant it names. */
  function tomorrow() {
    const d = new Date(Date.now() + 86_400_000)
    d.setSeconds(0, 0)
    const local = new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16)
    return { local, iso: d.toISOString() }
  }

  for (const [label, viewport] of [
    ['desktop', undefined],
    ['phone', PHONE],
  ] as const) {
    it(`shares a file from its row menu with every setting, and the link is there over REST (${label})`, async () => {
      const dir = `share-${label}`
      await uploaded(web.s, `${dir}/report.txt`, 'the numbers')
      const page = await freshPage(viewport)
      await signIn(page, web.s)
      await openFolder(page, dir)
      await rowAction(page, 'report.txt', 'Share')
      const dialog = page.getByRole('dialog', { name: `Share ${dir}/report.txt` })
      expect(await dialog.getByRole('radio', { name: 'Download', exact: true }).isChecked()).toBe(true)
      await dialog.getByRole('radio', { name: 'Download and upload' }).check()
      await dialog.getByLabel('Password (optional)').fill('open sesame 1')
      const until = tomorrow()
      await dialog.getByLabel('Expires (optional)').fill(until.local)
      await dialog.getByLabel('Maximum uses (optional)').fill('3')
      await dialog.getByLabel('Recipients give their name and e-mail address first').check()
      await dialog.getByLabel('Description shown to recipients (optional)').fill('Quarterly numbers')
      await dialog.getByRole('button', { name: 'Create link' }).click()

      const done = page.getByRole('dialog', { name: `Link to ${dir}/report.txt created` })
      const url = await done.getByLabel('Share link').inputValue()
      expect(url).toMatch(new RegExp(`^${web.s.url.replace(/[.]/g, '\\.')}/f/[0-9a-f]{32}$`))
      await done.getByRole('button', { name: 'Copy link' }).click()
      await shown(done.getByRole('button', { name: 'Copied' }))

      const listed = (await adminBundles()).find((b) => b.url === url)
      expect(listed).toBeDefined()
      const full = (await bundle(listed!.id)).body
      expect(full).toMatchObject({
        paths: [`${dir}/report.txt`],
        permissions: 'read_write',
        password_protected: true,
        max_uses: 3,
        require_registration: true,
        description: 'Quarterly numbers',
      })
      expect(new Date(full.expires_at).toISOString()).toBe(until.iso)

      // Escape closes the dialog and gives the focus back to the row's menu button.
      await page.keyboard.press('Escape')
      await expect.poll(() => done.count()).toBe(0)
      // The focus moves once the dialog has gone from the page: poll, as a screen reader would wait.
      await expect
        .poll(() =>
          page.evaluate(() => (globalThis as any).document.activeElement?.getAttribute('aria-label')),
        )
        .toBe('Actions for report.txt')

      // A refusal keeps the dialog open and says why.
      await rowAction(page, 'report.txt', 'Share')
      const again = page.getByRole('dialog', { name: `Share ${dir}/report.txt` })
      await again.getByLabel('Expires (optional)').fill('2001-01-01T10:00')
      await again.getByRole('button', { name: 'Create link' }).click()
      expect(await textOf(again.getByRole('alert'))).toContain('expires at must be in the future')
      await again.getByRole('button', { name: 'Cancel' }).click()
      expect((await adminBundles()).filter((b) => b.description === 'Quarterly numbers')).toHaveLength(
        label === 'desktop' ? 1 : 2,
      )
      expectNoOutsideRequests(page)
      await page.context().close()
    })
  }

  it('makes a folder an upload-only link with "Receive files"', async () => {
    await call(web.s, 'POST', '/folders/inbox-drop', { key: web.s.adminKey })
    const page = await freshPage()
    await signIn(page, web.s)
    await openFolder(page, '')
    await rowAction(page, 'inbox-drop', 'Receive files')
    const dialog = page.getByRole('dialog', { name: 'Receive files into inbox-drop' })
    expect(await dialog.getByRole('radio', { name: 'Upload only' }).isChecked()).toBe(true)
    await dialog.getByRole('button', { name: 'Create link' }).click()
    const url = await page
      .getByRole('dialog', { name: 'Link to inbox-drop created' })
      .getByLabel('Share link')
      .inputValue()
    const listed = (await adminBundles()).find((b) => b.url === url)
    expect((await bundle(listed!.id)).body).toMatchObject({ paths: ['inbox-drop'], permissions: 'write' })
    await page.context().close()
  })

  it('lists, edits and deletes links on the Shares page; a site admin sees everyone’s with the owner', async () => {
    const bob = await makeUser(web.s)
    expect(
      (
        await call(web.s, 'PATCH', `/users/${bob.id}`, {
          key: web.s.adminKey,
          body: { attachments_permission: true },
        })
      ).status,
    ).toBe(200)
    await grant(web.s, bob.id, 'bobs', 'full')
    await uploaded(web.s, 'bobs/a.txt', 'a')
    const session = await login(web.s, bob.username, bob.password)
    const made = await call(web.s, 'POST', '/bundles', {
      session,
      body: { paths: ['bobs/a.txt'], code: 'bobs-link', description: 'For the auditors' },
    })
    expect(made.status).toBe(201)
    const admins = await call(web.s, 'POST', '/bundles', {
      key: web.s.adminKey,
      body: { paths: ['bobs'], code: 'admins-link' },
    })
    expect(admins.status).toBe(201)

    // The site admin sees both, each with its owner.
    const adminPage = await freshPage()
    await signIn(adminPage, web.s)
    await openShares(adminPage)
    const adminRow = (code: string) => adminPage.locator('tbody tr').filter({ hasText: `/f/${code}` })
    await shown(adminRow('bobs-link'))
    expect(await adminPage.getByRole('columnheader', { name: 'Owner' }).count()).toBe(1)
    expect(await textOf(adminRow('bobs-link'))).toContain(bob.username)
    expect(await textOf(adminRow('admins-link'))).toContain('bobs')
    await adminPage.context().close()

    for (const viewport of [undefined, PHONE]) {
      const page = await freshPage(viewport)
      await signIn(page, web.s, bob.username, bob.password)
      await openShares(page)
      const row = page.locator('tbody tr').filter({ hasText: '/f/bobs-link' })
      await shown(row)
      expect(await page.locator('tbody tr').count()).toBe(1)
      expect(await page.getByRole('columnheader', { name: 'Owner' }).count()).toBe(0)
      await expect.poll(() => textOf(row)).toContain('bobs/a.txt')
      const text = await textOf(row)
      for (const word of ['Download', 'Never', 'No limit']) expect(text).toContain(word)
      if (viewport) {
        // Every action of the row is reachable on a phone.
        expect(
          await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth),
        ).toBeLessThanOrEqual(PHONE.width)
      }
      await page.context().close()
    }

    const page = await freshPage()
    await signIn(page, web.s, bob.username, bob.password)
    await openShares(page)
    const row = page.locator('tbody tr').filter({ hasText: '/f/bobs-link' })
    await row.getByRole('button', { name: 'Edit For the auditors' }).click()
    const edit = page.getByRole('dialog', { name: 'Edit share link of bobs/a.txt' })
    expect(await edit.getByLabel('Description shown to recipients (optional)').inputValue()).toBe(
      'For the auditors',
    )
    await edit.getByRole('radio', { name: 'Upload only' }).check()
    await edit.getByLabel('Maximum uses (optional)').fill('5')
    await edit.getByRole('button', { name: 'Save' }).click()
    await shown(page.getByRole('status').filter({ hasText: 'Saved the link' }))
    expect((await bundle(made.body.id)).body).toMatchObject({ permissions: 'write', max_uses: 5 })
    await expect.poll(() => textOf(row)).toContain('Upload only')
    expect(await textOf(row)).toContain('at most 5')

    // Deleting asks first; keeping it changes nothing.
    await row.getByRole('button', { name: 'Delete For the auditors' }).click()
    await page.getByRole('button', { name: 'Keep it' }).click()
    expect((await bundle(made.body.id)).status).toBe(200)
    await row.getByRole('button', { name: 'Delete For the auditors' }).click()
    await page.getByRole('button', { name: 'Yes, delete' }).click()
    await shown(page.getByText('No share links yet.'))
    expect((await bundle(made.body.id)).status).toBe(404)
    expect((await bundle(admins.body.id)).status).toBe(200)
    await page.context().close()
  })

  it('shows a link’s activity: who came, what they downloaded alone or in a ZIP, and what they uploaded', async () => {
    await uploaded(web.s, 'activity/docs/report.txt', 'the report')
    await uploaded(web.s, 'activity/drop/.keep', '')
    const made = await call(web.s, 'POST', '/bundles', {
      key: web.s.adminKey,
      body: {
        paths: ['activity/docs', 'activity/drop'],
        permissions: 'read_write',
        require_registration: true,
        description: 'Audit pack',
      },
    })
    expect(made.status).toBe(201)
    const pub = (rest: string) => `/public/bundles/${made.body.code}${rest}`
    const reg = await call(web.s, 'POST', pub('/registrations'), {
      body: { name: 'Vera Visitor', email: 'vera@example.com', company: 'Audits Ltd' },
    })
    expect(reg.status).toBe(201)
    const as = { headers: { 'X-Bundle-Registration-Code': reg.body.code } }
    const file = await call(web.s, 'GET', pub('/files/docs/report.txt'), as)
    expect(await (await fetch(file.body.download_uri)).text()).toBe('the report')
    const zip = await call(web.s, 'POST', pub('/zip'), { ...as, body: { paths: ['docs'] } })
    expect((await fetch(zip.body.download_uri)).status).toBe(200)
    const put = await call(web.s, 'POST', pub('/files/drop/scan.pdf'), { ...as, body: { action: 'put' } })
    expect((await fetch(put.body.upload_uri, { method: 'PUT', body: 'scan' })).status).toBe(200)
    const end = await call(web.s, 'POST', pub('/files/drop/scan.pdf'), {
      ...as,
      body: { action: 'end', ref: put.body.ref },
    })
    expect(end.status).toBe(201)

    for (const viewport of [undefined, PHONE]) {
      const page = await freshPage(viewport)
      await signIn(page, web.s)
      await openShares(page)
      const row = page.locator('tbody tr').filter({ hasText: `/f/${made.body.code}` })
      await row.getByRole('button', { name: 'Activity of Audit pack' }).click()
      const dialog = page.getByRole('dialog', { name: 'Activity of Audit pack' })
      await shown(dialog.getByRole('heading', { name: 'Visits (1)' }))
      const visits = dialog.getByRole('table', { name: 'Visits' })
      expect(await textOf(visits)).toContain('Vera Visitor <vera@example.com> (Audits Ltd)')
      const downloads = await textOf(dialog.getByRole('table', { name: 'Downloads' }))
      expect(downloads).toContain('docs/report.txt')
      expect(downloads).toContain('On its own')
      expect(downloads).toContain('In a ZIP')
      await shown(dialog.getByRole('heading', { name: 'Uploads (1)' }))
      expect(await textOf(dialog.getByRole('table', { name: 'Uploads' }))).toContain('scan.pdf')
      if (viewport) {
        expect(
          await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth),
        ).toBeLessThanOrEqual(PHONE.width)
      }
      await dialog.getByRole('button', { name: 'Close' }).click()
      await expect.poll(() => dialog.count()).toBe(0)
      expectNoOutsideRequests(page)
      await page.context().close()
    }
  })

  it('pages through many links, and offers Share to a user allowed to make links', async () => {
    const carol = await makeUser(web.s)
    await grant(web.s, carol.id, 'carols', 'full')
    await uploaded(web.s, 'carols/doc.txt', 'doc')
    const page = await freshPage()
    await signIn(page, web.s, carol.username, carol.password)
    await openFolder(page, 'carols')
    await shown(page.getByRole('button', { name: 'Actions for doc.txt' }))
    expect(await rowActions(page, 'doc.txt')).not.toContain('Share')

    expect(
      (
        await call(web.s, 'PATCH', `/users/${carol.id}`, {
          key: web.s.adminKey,
          body: { attachments_permission: true },
        })
      ).status,
    ).toBe(200)
    await page.reload()
    await shown(page.getByRole('button', { name: 'Actions for doc.txt' }))
    expect(await rowActions(page, 'doc.txt')).toContain('Share')

    const session = await login(web.s, carol.username, carol.password)
    for (let i = 0; i < 26; i++) {
      const r = await call(web.s, 'POST', '/bundles', {
        session,
        body: { paths: ['carols/doc.txt'], code: `carol-${String(i).padStart(2, '0')}` },
      })
      expect(r.status).toBe(201)
    }
    await openShares(page)
    const rows = page.locator('tbody tr[data-bundle-id]')
    await expect.poll(() => rows.count()).toBe(25)
    const pager = page.getByRole('navigation', { name: 'Share links pages' })
    await pager.getByRole('button', { name: 'Next' }).click()
    await expect.poll(() => rows.count()).toBe(1)
    await pager.getByRole('button', { name: 'Previous' }).click()
    await expect.poll(() => rows.count()).toBe(25)
    await page.context().close()
  })
})
