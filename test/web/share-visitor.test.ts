import { execFileSync } from 'node:child_process'
import fs from 'node:fs/promises'
import type { Page } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import {
  BROWSER_SUITE,
  expectNoOutsideRequests,
  hasBrowser,
  newPage,
  shown,
  textOf,
  webSuite,
} from '../helpers/browser.js'
import { bytes, download, md5, target, uploaded } from '../helpers/files.js'
import { overflowing } from '../helpers/phone-layout.js'
import { call } from '../helpers/server.js'

const PART = 64 * 1024
const PHONE = { width: 390, height: 844 }
const NOT_VALID = 'This link is not valid. It may have expired or been removed'

describe.skipIf(!hasBrowser)('web interface: a share link’s page for its recipients', BROWSER_SUITE, () => {
  const web = webSuite({ UPLOAD_PART_SIZE: String(PART), LOGIN_DEFENDER_THRESHOLD: '100000' })

  async function freshPage(viewport?: { width: number; height: number }): Promise<Page> {
    const page = await newPage(web.browser, web.s, viewport)
    page.setDefaultTimeout(10_000)
    return page
  }
  /** A share link of `paths` made by the admin over REST; its code. */
  async function share(paths: string[], more: Record<string, unknown> = {}) {
    const r = await call(web.s, 'POST', '/bundles', { key: web.s.adminKey, body: { paths, ...more } })
    expect(r.status).toBe(201)
    return { code: r.body.code as string, id: r.body.id as number }
  }
  const visit = (page: Page, code: string) => page.goto(`${web.s.url}/f/${code}`)
  const table = (page: Page) => page.getByRole('region', { name: 'Shared files and folders' })

  async function waitComplete(page: Page, name: string) {
    const bar = page.getByLabel(`Upload progress of ${name}`, { exact: true })
    const item = page.locator('li.upload', { has: bar })
    // A failure is named in the assertion's message.
    await expect
      .poll(
        async () => ((await item.locator('.error').count()) ? item.innerText() : bar.getAttribute('value')),
        {
          timeout: 15_000,
        },
      )
      .toBe('100')
    const status = async () => {
      const text = await item.locator('.upload-status').innerText()
      return text === 'Failed' ? item.innerText() : text
    }
    await expect.poll(status, { timeout: 15_000 }).toBe('Complete')
  }

  for (const [label, viewport] of [
    ['desktop', undefined],
    ['phone', PHONE],
  ] as const) {
    it(`unlocks with password and registration, browses, downloads a file and a ZIP, and uploads (${label})`, async () => {
      const root = `visit-${label}`
      const a = bytes(3000, 1)
      await uploaded(web.s, `${root}/docs/a.bin`, a)
      await uploaded(web.s, `${root}/docs/sub/b.txt`, 'bee')
      await uploaded(web.s, `${root}/docs/c.txt`, 'sea')
      const b = await share([`${root}/docs`], {
        permissions: 'read_write',
        password: 'open sesame 7',
        require_registration: true,
        skip_company: true,
        description: 'Papers for you',
      })
      const page = await freshPage(viewport)
      await visit(page, b.code)

      // The link asks for what it needs: the password, a name and an e-mail address, no company.
      const form = page.getByRole('form', { name: 'Papers for you' })
      await shown(form)
      expect(await page.getByLabel('Your company').count()).toBe(0)
      await page.getByLabel('Password').fill('not it')
      await page.getByLabel('Your name').fill('Vera Visitor')
      await page.getByLabel('Your e-mail address').fill('vera@example.com')
      await page.getByRole('button', { name: 'Open' }).click()
      expect(await textOf(page.getByRole('alert'))).toBe(
        'That password is not right. Check it and try again.',
      )
      await page.getByLabel('Password').fill('open sesame 7')
      await page.getByRole('button', { name: 'Open' }).click()

      // The shared folder, then inside it, then a folder inside that, and back by the breadcrumbs.
      await shown(table(page).getByRole('link', { name: 'docs (folder)' }))
      await table(page).getByRole('link', { name: 'docs (folder)' }).click()
      await shown(table(page).getByRole('cell', { name: 'a.bin', exact: true }))
      expect(await textOf(page.getByRole('row', { name: /a\.bin/ }))).toContain('2.9 KiB')
      await table(page).getByRole('link', { name: 'sub (folder)' }).click()
      await shown(table(page).getByRole('cell', { name: 'b.txt', exact: true }))
      // Each folder opened puts the focus on the page's heading, for a screen reader to start there.
      expect(await page.evaluate(() => (globalThis as any).document.activeElement?.textContent)).toBe(
        'Papers for you',
      )
      const crumbs = page.getByRole('navigation', { name: 'Folders' })
      expect(await crumbs.getByRole('link', { name: 'sub' }).getAttribute('aria-current')).toBe('page')
      await crumbs.getByRole('link', { name: 'docs' }).click()
      await shown(table(page).getByRole('cell', { name: 'a.bin', exact: true }))

      // One file: its very bytes.
      const [dl] = await Promise.all([
        page.waitForEvent('download', { timeout: 10_000 }),
        page.getByRole('button', { name: 'Download a.bin', exact: true }).click(),
      ])
      expect(dl.suggestedFilename()).toBe('a.bin')
      expect(md5(await fs.readFile((await dl.path())!))).toBe(md5(a))

      // A selection as one ZIP: a file and a folder with what is inside it.
      await page.getByLabel('Select c.txt').check()
      await page.getByLabel('Select sub').check()
      expect(await textOf(page.getByRole('status').filter({ hasText: 'selected' }))).toBe('2 selected')
      const [zip] = await Promise.all([
        page.waitForEvent('download', { timeout: 10_000 }),
        page.getByRole('button', { name: 'Download selected as ZIP' }).click(),
      ])
      const names = execFileSync('unzip', ['-Z1', (await zip.path())!])
        .toString()
        .trim()
        .split('\n')
        .sort()
      expect(names).toEqual(['docs/c.txt', 'docs/sub/', 'docs/sub/b.txt'])

      // The folder shown, as one ZIP.
      await page.getByRole('button', { name: 'Clear selection' }).click()
      const [folderZip] = await Promise.all([
        page.waitForEvent('download', { timeout: 10_000 }),
        page.getByRole('button', { name: 'Download this folder as ZIP' }).click(),
      ])
      const all = execFileSync('unzip', ['-Z1', (await folderZip.path())!])
        .toString()
        .trim()
        .split('\n')
        .sort()
      expect(all).toEqual(['docs/', 'docs/a.bin', 'docs/c.txt', 'docs/sub/', 'docs/sub/b.txt'])

      // An upload in three parts, its progress shown; it lands in the visitor's own folder.
      const big = bytes(PART * 2 + 777, 5)
      await page
        .getByLabel('Choose files to upload')
        .setInputFiles([{ name: 'report.bin', mimeType: 'application/octet-stream', buffer: big }])
      await waitComplete(page, 'report.bin')
      expect((await download(target(web.s), `${root}/docs/Vera Visitor/report.bin`)).equals(big)).toBe(true)
      // The listing shows the visitor's folder once the upload is stored.
      await shown(table(page).getByRole('link', { name: 'Vera Visitor (folder)' }))

      // A reload is the same visit: nothing is asked again.
      await page.reload()
      await shown(table(page).getByRole('cell', { name: 'a.bin', exact: true }))
      if (viewport) expect(await overflowing(page)).toEqual([])
      expectNoOutsideRequests(page)
      await page.context().close()
    })

    it(`a write-only link shows only where to send files, and they arrive in its folder (${label})`, async () => {
      const root = `drop-${label}`
      await call(web.s, 'POST', `/folders/${root}/inbox`, { key: web.s.adminKey })
      await uploaded(web.s, `${root}/inbox/secret.txt`, 'not for visitors')
      const b = await share([`${root}/inbox`], { permissions: 'write', require_registration: true })
      const page = await freshPage(viewport)
      await visit(page, b.code)
      await page.getByLabel('Your name').fill('Sam Sender')
      await page.getByLabel('Your e-mail address').fill('sam@example.com')
      await page.getByLabel('Your company').fill('Senders Ltd')
      await page.getByRole('button', { name: 'Open' }).click()
      await shown(page.getByRole('region', { name: 'Send files' }))
      expect(await table(page).count()).toBe(0)
      expect(await page.getByText('secret.txt').count()).toBe(0)
      await page
        .getByLabel('Choose files to upload')
        .setInputFiles([{ name: 'invoice.txt', mimeType: 'text/plain', buffer: Buffer.from('pay me') }])
      // And one dropped on the page.
      const dt = await page.evaluateHandle(() => {
        // Runs in the page (this file is typed without the DOM).
        const w = globalThis as any
        const d = new w.DataTransfer()
        d.items.add(new w.File(['dropped in'], 'dropped.txt'))
        return d
      })
      await page.dispatchEvent('[data-testid=drop-zone]', 'dragenter', { dataTransfer: dt })
      await page.dispatchEvent('[data-testid=drop-zone]', 'drop', { dataTransfer: dt })
      await waitComplete(page, 'invoice.txt')
      await waitComplete(page, 'dropped.txt')
      expect((await download(target(web.s), `${root}/inbox/Sam Sender/dropped.txt`)).toString()).toBe(
        'dropped in',
      )
      expect((await download(target(web.s), `${root}/inbox/Sam Sender/invoice.txt`)).toString()).toBe(
        'pay me',
      )
      if (viewport) expect(await overflowing(page)).toEqual([])
      expectNoOutsideRequests(page)
      await page.context().close()
    })
  }

  it('says an expired link and an unknown one are not valid, in the same words, and that a used-up link is used up', async () => {
    await uploaded(web.s, 'gone/x.txt', 'x')
    const expired = await share(['gone/x.txt'])
    await web.s.container.db
      .updateTable('bundles')
      .set({ expires_at: Date.now() - 60_000 })
      .where('id', '=', expired.id)
      .execute()
    const page = await freshPage(PHONE)
    await visit(page, expired.code)
    expect(await textOf(page.getByRole('alert'))).toContain(NOT_VALID)
    await visit(page, 'no-such-code-at-all')
    expect(await textOf(page.getByRole('alert'))).toContain(NOT_VALID)

    const once = await share(['gone/x.txt'], { max_uses: 1 })
    await call(web.s, 'POST', `/public/bundles/${once.code}/registrations`, { body: {} })
    await visit(page, once.code)
    expect(await textOf(page.getByRole('alert'))).toBe(
      'This link has been used as many times as it may be. Ask whoever sent it for a new one.',
    )
    expectNoOutsideRequests(page)
    await page.context().close()
  })

  it('a preview-only link lists the files without any way to download them', async () => {
    await uploaded(web.s, 'look/photo.txt', 'look but do not take')
    const b = await share(['look'], { permissions: 'preview_only' })
    const page = await freshPage()
    await visit(page, b.code)
    await table(page).getByRole('link', { name: 'look (folder)' }).click()
    await shown(table(page).getByRole('cell', { name: 'photo.txt', exact: true }))
    expect(await page.getByRole('button', { name: /Download/ }).count()).toBe(0)
    expect(await page.getByRole('checkbox').count()).toBe(0)
    expect(await page.getByRole('region', { name: 'Send files' }).count()).toBe(0)
    expectNoOutsideRequests(page)
    await page.context().close()
  })
})
