import fs from 'node:fs/promises'
import type { Page } from 'playwright-core'
import { describe, expect, it, vi } from 'vitest'
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
import { bytes, download, md5, target, uploaded } from '../helpers/files.js'
import { openRowMenu, rowAction, rowActions } from '../helpers/files-page.js'
import { cutOff } from '../helpers/phone-layout.js'
import { call, grant, makeUser } from '../helpers/server.js'

const PART = 64 * 1024

describe.skipIf(!hasBrowser)('web interface: files', BROWSER_SUITE, () => {
  const web = webSuite({ UPLOAD_PART_SIZE: String(PART), LOGIN_DEFENDER_THRESHOLD: '100000' })

  const fileRow = (path: string) =>
    web.s.container.db
      .selectFrom('files')
      .select(['id', 'path', 'type', 'md5', 'size'])
      .where('path', '=', path)
      .executeTakeFirst()
  /** The row once its md5 is known: a background job computes it after the upload. */
  const summedRow = (path: string) =>
    vi.waitFor(
      async () => {
        const row = await fileRow(path)
        if (!row?.md5) throw new Error(`no md5 yet for ${path}`)
        return row
      },
      { timeout: 20_000, interval: 20 },
    )

  const actionsOf = (action: string, path: string) =>
    web.s.container.db
      .selectFrom('actions')
      .select(['interface', 'path', 'source', 'destination'])
      .where('action', '=', action)
      .where('path', '=', path)
      .execute()

  /** A fresh page whose every wait is bounded below the test's own timeout. */
  async function freshPage(viewport?: { width: number; height: number }): Promise<Page> {
    const page = await newPage(web.browser, web.s, viewport)
    page.setDefaultTimeout(10_000)
    return page
  }

  async function openFolder(page: Page, folder: string) {
    await page.goto(`${web.s.url}/#/files/${folder.split('/').map(encodeURIComponent).join('/')}`)
    await shown(page.getByRole('heading', { level: 1, name: 'Files' }))
  }

  async function waitComplete(page: Page, name: string) {
    const bar = page.getByLabel(`Upload progress of ${name}`, { exact: true })
    await expect.poll(() => bar.getAttribute('value'), { timeout: 15_000 }).toBe('100')
    const item = page.locator('li.upload', { has: bar })
    await expect.poll(() => item.locator('.upload-status').innerText(), { timeout: 15_000 }).toBe('Complete')
  }

  it('uploads several files through the input and one by drop, in parts, recorded as web', async () => {
    await call(web.s, 'POST', '/folders/inbox', { key: web.s.adminKey })
    const page = await freshPage()
    const partPuts: string[] = []
    page.on('request', (r) => {
      if (r.method() === 'PUT' && r.url().includes('/upload_parts/')) partPuts.push(r.url())
    })
    await signIn(page, web.s)
    await openFolder(page, 'inbox')

    const big = bytes(PART * 2 + 12_345, 3)
    const small = Buffer.from('hello from the web interface\n')
    const empty = Buffer.alloc(0)
    await page.getByLabel('Choose files to upload').setInputFiles([
      { name: 'big.bin', mimeType: 'application/octet-stream', buffer: big },
      { name: 'notes.txt', mimeType: 'text/plain', buffer: small },
      { name: 'empty.txt', mimeType: 'text/plain', buffer: empty },
    ])
    const dropped = bytes(5000, 9)
    const dt = await page.evaluateHandle((b64) => {
      // Runs in the page (this file is typed without the DOM).
      const w = globalThis as any
      const raw = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))
      const d = new w.DataTransfer()
      d.items.add(new w.File([raw], 'dropped.dat'))
      return d
    }, dropped.toString('base64'))
    await page.dispatchEvent('[data-testid=drop-zone]', 'dragenter', { dataTransfer: dt })
    await page.dispatchEvent('[data-testid=drop-zone]', 'drop', { dataTransfer: dt })

    for (const name of ['big.bin', 'notes.txt', 'empty.txt', 'dropped.dat']) await waitComplete(page, name)

    const expected: Record<string, Buffer> = {
      'inbox/big.bin': big,
      'inbox/notes.txt': small,
      'inbox/empty.txt': empty,
      'inbox/dropped.dat': dropped,
    }
    for (const [path, content] of Object.entries(expected)) {
      const row = await summedRow(path)
      expect(row, path).toMatchObject({ type: 'file', size: content.length, md5: md5(content) })
      expect((await download(target(web.s), path)).equals(content), path).toBe(true)
      expect(await actionsOf('create', path)).toEqual([expect.objectContaining({ interface: 'web', path })])
    }
    // The big file went in three parts of the server's part size, the empty one in none.
    expect(partPuts.length).toBe(3 + 1 + 0 + 1)
    expect(partPuts.filter((u) => /\/upload_parts\/[^/]+\/3\?/.test(u))).toHaveLength(1)

    // The listing refreshed itself with the new files.
    for (const name of ['big.bin', 'notes.txt', 'empty.txt', 'dropped.dat']) {
      await shown(page.getByRole('cell', { name, exact: true }))
    }
    expect(await textOf(page.getByRole('row', { name: /big\.bin/ }))).toContain('140 KiB')

    // Downloading through the page gives the very bytes.
    const [dl] = await Promise.all([
      page.waitForEvent('download', { timeout: 10_000 }),
      rowAction(page, 'big.bin', 'Download'),
    ])
    expect(dl.suggestedFilename()).toBe('big.bin')
    const saved = await fs.readFile((await dl.path())!)
    expect(md5(saved)).toBe(md5(big))
    expectNoOutsideRequests(page)
    await page.context().close()
  })

  it('shows a failed upload in words, and retries or dismisses it', async () => {
    const page = await freshPage()
    await signIn(page, web.s)
    await call(web.s, 'POST', '/folders/later', { key: web.s.adminKey })
    await openFolder(page, 'later')
    await shown(page.getByLabel('Choose files to upload'))
    // The folder goes away (a file takes its name) after the page was opened.
    await call(web.s, 'DELETE', '/files/later', { key: web.s.adminKey })
    await uploaded(web.s, 'later', 'now a file')
    await page
      .getByLabel('Choose files to upload')
      .setInputFiles([{ name: 'x.txt', mimeType: 'text/plain', buffer: Buffer.from('x') }])
    const alert = page.locator('li.upload').getByRole('alert')
    expect(await textOf(alert)).toContain('later is a file, so it cannot hold later/x.txt')
    // After the obstacle is gone, Retry succeeds.
    await call(web.s, 'DELETE', '/files/later', { key: web.s.adminKey })
    await page.getByRole('button', { name: 'Retry x.txt' }).click()
    await waitComplete(page, 'x.txt')
    expect(await summedRow('later/x.txt')).toMatchObject({ size: 1, md5: md5('x') })
    await page.getByRole('button', { name: 'Dismiss x.txt' }).click()
    await expect.poll(() => page.getByLabel('Upload progress of x.txt').count()).toBe(0)
    await page.context().close()
  })

  it('creates, renames, moves, copies and deletes, each recorded as web', async () => {
    await call(web.s, 'POST', '/folders/work', { key: web.s.adminKey })
    await uploaded(web.s, 'work/report.pdf', bytes(3000, 4))
    const page = await freshPage()
    await signIn(page, web.s)
    await openFolder(page, 'work')
    await shown(page.getByRole('cell', { name: 'report.pdf' }))

    await page.getByLabel('New folder name').fill('archive')
    await page.getByRole('button', { name: 'Create folder' }).click()
    await shown(page.getByRole('link', { name: 'archive' }))
    expect(await fileRow('work/archive')).toMatchObject({ type: 'directory' })
    expect((await actionsOf('create', 'work/archive'))[0]?.interface).toBe('web')

    const original = await fileRow('work/report.pdf')
    await rowAction(page, 'report.pdf', 'Rename')
    const dialog = page.getByRole('dialog', { name: 'Rename report.pdf' })
    await dialog.getByLabel('New name').fill('report-2026.pdf')
    await dialog.getByRole('button', { name: 'Rename' }).click()
    await shown(page.getByRole('cell', { name: 'report-2026.pdf' }))
    expect(await fileRow('work/report.pdf')).toBeUndefined()
    expect((await fileRow('work/report-2026.pdf'))?.id).toBe(original!.id)
    expect((await actionsOf('move', 'work/report-2026.pdf'))[0]).toMatchObject({
      interface: 'web',
      source: 'work/report.pdf',
    })

    await rowAction(page, 'report-2026.pdf', 'Copy')
    const copy = page.getByRole('dialog', { name: 'Copy report-2026.pdf' })
    expect(await copy.getByLabel('Copy to (full path)').inputValue()).toBe('work/report-2026 copy.pdf')
    await copy.getByRole('button', { name: 'Copy' }).click()
    await shown(page.getByRole('cell', { name: 'report-2026 copy.pdf' }))
    const copied = await summedRow('work/report-2026 copy.pdf')
    expect(copied?.md5).toBe(md5(bytes(3000, 4)))
    expect((await actionsOf('copy', 'work/report-2026 copy.pdf'))[0]?.interface).toBe('web')

    await rowAction(page, 'report-2026 copy.pdf', 'Move')
    const move = page.getByRole('dialog', { name: 'Move report-2026 copy.pdf' })
    await move.getByLabel('Move to (full path)').fill('work/archive/kept.pdf')
    await move.getByRole('button', { name: 'Move' }).click()
    await shown(page.getByRole('status').filter({ hasText: 'Moved work/report-2026 copy.pdf' }))
    expect(await fileRow('work/report-2026 copy.pdf')).toBeUndefined()
    expect((await fileRow('work/archive/kept.pdf'))?.id).toBe(copied!.id)

    // A refused change keeps the dialog open and says why.
    await rowAction(page, 'report-2026.pdf', 'Move')
    const clash = page.getByRole('dialog', { name: 'Move report-2026.pdf' })
    await clash.getByLabel('Move to (full path)').fill('work/archive')
    await clash.getByRole('button', { name: 'Move' }).click()
    expect(await textOf(clash.getByRole('alert'))).toMatch(/exists/)
    await clash.getByRole('button', { name: 'Cancel' }).click()
    expect(await fileRow('work/report-2026.pdf')).toBeDefined()

    // Deleting a folder asks first, then takes everything inside it.
    await rowAction(page, 'archive', 'Delete')
    const confirm = page.getByRole('dialog', { name: 'Delete archive?' })
    expect(await textOf(confirm)).toContain('everything inside it')
    await confirm.getByRole('button', { name: 'Delete' }).click()
    await shown(page.getByRole('status').filter({ hasText: 'Deleted work/archive' }))
    expect(await fileRow('work/archive')).toBeUndefined()
    expect(await fileRow('work/archive/kept.pdf')).toBeUndefined()
    expect((await actionsOf('destroy', 'work/archive'))[0]?.interface).toBe('web')
    await expect.poll(() => page.getByRole('link', { name: 'archive' }).count()).toBe(0)
    await page.context().close()
  })

  it('offers a read-only user no changes, and shows a refusal that happens anyway', async () => {
    await uploaded(web.s, 'shared/plan.txt', 'the plan')
    await uploaded(web.s, 'team/todo.txt', 'things')
    const u = await makeUser(web.s)
    await grant(web.s, u.id, 'shared', 'readonly')
    await grant(web.s, u.id, 'team', 'full')
    const page = await freshPage()
    await signIn(page, web.s, u.username, u.password)

    await openFolder(page, 'shared')
    await shown(page.getByRole('cell', { name: 'plan.txt' }))
    await shown(page.getByText('You can look at this folder but not change it.'))
    // Looking and downloading only: no change, and no share link (the user may not make them).
    expect(await rowActions(page, 'plan.txt')).toEqual(['Preview', 'Download'])
    expect(await page.getByLabel('Choose files to upload').count()).toBe(0)
    expect(await page.getByLabel('New folder name').count()).toBe(0)

    // A folder the user may not list says so once, with no word of looking at it.
    await uploaded(web.s, 'docs/secret.txt', 'not for u')
    await openFolder(page, 'docs')
    expect(await textOf(page.getByRole('alert'))).toBe('You do not have permission to list docs')
    expect(await page.getByText('You can look at this folder but not change it.').count()).toBe(0)

    // The root shows only the way to the user's folders, with nothing to change there.
    await page
      .getByRole('navigation', { name: 'Breadcrumb' })
      .getByRole('link', { name: 'All files' })
      .click()
    await shown(page.getByRole('link', { name: 'team' }))
    await shown(page.getByText('You can look at this folder but not change it.'))
    expect(await page.getByRole('link', { name: 'work' }).count()).toBe(0)
    expect(await page.getByLabel('Choose files to upload').count()).toBe(0)

    // Full permission on team: changes are offered; taken away meanwhile, the API's refusal shows.
    await page.getByRole('link', { name: 'team' }).click()
    await shown(page.getByRole('button', { name: 'Actions for todo.txt' }))
    expect(await rowActions(page, 'todo.txt')).toEqual([
      'Preview',
      'Download',
      'Rename',
      'Move',
      'Copy',
      'Delete',
    ])
    await shown(page.getByLabel('Choose files to upload'))
    await web.s.container.db
      .deleteFrom('permissions')
      .where('user_id', '=', u.id)
      .where('path', '=', 'team')
      .execute()
    await grant(web.s, u.id, 'team', 'readonly')
    await rowAction(page, 'todo.txt', 'Delete')
    const confirm = page.getByRole('dialog', { name: 'Delete todo.txt?' })
    await confirm.getByRole('button', { name: 'Delete' }).click()
    expect(await textOf(confirm.getByRole('alert'))).toBe(
      'You do not have permission to delete team/todo.txt',
    )
    expect(await fileRow('team/todo.txt')).toBeDefined()
    await page.context().close()
  })

  it('sorts by the column headers, searches, and loads more', async () => {
    await uploaded(web.s, 'sorted/b-medium.txt', 'x'.repeat(50))
    await uploaded(web.s, 'sorted/a-large.txt', 'x'.repeat(500))
    await uploaded(web.s, 'sorted/c-small.txt', 'x')
    await uploaded(web.s, 'sorted/deep/inner/c-needle.txt', 'found')
    for (let i = 0; i < 100; i++) {
      await call(web.s, 'POST', `/folders/sorted/z${String(i).padStart(3, '0')}`, { key: web.s.adminKey })
    }
    const page = await freshPage()
    await signIn(page, web.s)
    await openFolder(page, 'sorted')
    const names = () => page.locator('tbody tr td.name').allInnerTexts()
    await shown(page.getByRole('cell', { name: 'a-large.txt' }))
    expect((await names()).slice(0, 4)).toEqual(['a-large.txt', 'b-medium.txt', 'c-small.txt', 'deep'])
    expect(await page.locator('tbody tr').count()).toBe(100)
    await page.getByRole('button', { name: 'Load more' }).click()
    await expect.poll(() => page.locator('tbody tr').count()).toBe(104)
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0)

    await page.getByRole('button', { name: /^Size/ }).click()
    // Sorted anew from the first page: the 101 empty folders come first, the largest file last.
    await expect.poll(async () => (await names()).length).toBe(100)
    const types = () => page.locator('tbody tr td.col-type').allInnerTexts()
    await expect.poll(async () => (await types()).every((t) => t === 'Folder')).toBe(true)
    await page.getByRole('button', { name: 'Load more' }).click()
    await expect
      .poll(async () => (await names()).slice(101))
      .toEqual(['c-small.txt', 'b-medium.txt', 'a-large.txt'])
    expect(await page.locator('th[aria-sort]').getAttribute('aria-sort')).toBe('ascending')
    await page.getByRole('button', { name: /^Size/ }).click()
    await expect
      .poll(async () => (await names()).slice(0, 3))
      .toEqual(['a-large.txt', 'b-medium.txt', 'c-small.txt'])
    expect(await page.locator('th[aria-sort]').getAttribute('aria-sort')).toBe('descending')

    await page.getByLabel('Search in this folder').fill('needle')
    await page.getByRole('button', { name: 'Search', exact: true }).click()
    await expect.poll(names).toEqual(['deep/inner/c-needle.txt'])
    await page.getByRole('button', { name: 'Clear search' }).click()
    await expect.poll(async () => (await names()).length).toBe(100)
    await page.context().close()
  })

  it('shows every column and action of a folder inside a phone screen, and the table on a desktop', async () => {
    await uploaded(web.s, 'phone/quarterly numbers for the board, final version.xlsx', 'x'.repeat(2048))
    await uploaded(web.s, 'phone/sub folder/a.txt', 'a')
    const page = await freshPage({ width: 390, height: 844 })
    await signIn(page, web.s)
    await openFolder(page, 'phone')
    const xlsx = 'quarterly numbers for the board, final version.xlsx'
    await shown(page.getByRole('button', { name: `Actions for ${xlsx}` }))
    // Checkbox, name, size, modified, type and menu of each entry: whole, visible, on the screen.
    // (A folder's size cell is empty: nothing in it to show.)
    const cells = '.files-table tbody td:not(:empty)'
    expect(await page.locator(cells).count()).toBe(11)
    expect(await cutOff(page, cells, '.table-wrap')).toEqual([])
    const controls = '.files-table tbody button, .files-table tbody input'
    expect(await page.locator(controls).count()).toBe(4)
    expect(await cutOff(page, controls, '.table-wrap')).toEqual([])
    // The last row's menu opens whole inside the screen.
    await openRowMenu(page, 'sub folder')
    const items = page.getByRole('menuitem')
    expect(await items.allInnerTexts()).toEqual([
      'Share',
      'Receive files',
      'Rename',
      'Move',
      'Copy',
      'Delete',
    ])
    expect(await cutOff(page, '[role=menuitem]', 'body')).toEqual([])
    const menuBox = await page.getByRole('menu').evaluate((m: any) => m.getBoundingClientRect())
    expect(menuBox.top).toBeGreaterThanOrEqual(0)
    expect(menuBox.bottom).toBeLessThanOrEqual(844)
    await page.keyboard.press('Escape')
    await expect.poll(() => items.count()).toBe(0)
    expect(await textOf(page.locator('.files-table tbody tr').filter({ hasText: 'xlsx' }))).toContain(
      'XLSX file',
    )
    // Sorting stays at hand.
    expect(await cutOff(page, '.files-table thead button', '.table-wrap')).toEqual([])
    await page.getByRole('button', { name: /^Size/ }).click()
    await expect.poll(() => page.locator('th[aria-sort]').getAttribute('aria-sort')).toBe('ascending')
    await page.context().close()

    // The desktop keeps its table: one row per entry, the six column headers side by side.
    const wide = await freshPage()
    await signIn(wide, web.s)
    await openFolder(wide, 'phone')
    await shown(wide.getByRole('button', { name: 'Actions for sub folder' }))
    const headers = await wide
      .locator('.files-table thead th')
      .evaluateAll((ths: any[]) => ths.map((th) => Math.round(th.getBoundingClientRect().top)))
    expect(headers).toHaveLength(6)
    expect(new Set(headers).size).toBe(1)
    const display = await wide
      .locator('.files-table tbody tr')
      .first()
      .evaluate((tr: any) => (globalThis as any).getComputedStyle(tr).display)
    expect(display).toBe('table-row')
    await wide.context().close()
  })

  it('works with spaces and unicode in names, and at phone width', async () => {
    const page = await freshPage({ width: 390, height: 844 })
    await signIn(page, web.s)
    await openFolder(page, '')
    const folder = 'Q3 reports – été 日本'
    await page.getByLabel('New folder name').fill(folder)
    await page.getByRole('button', { name: 'Create folder' }).click()
    await page.getByRole('link', { name: folder }).click()
    await shown(page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: folder }))
    expect(decodeURIComponent(new URL(page.url()).hash)).toBe(`#/files/${folder}`)
    const content = Buffer.from('naïve café ☕\n')
    await page
      .getByLabel('Choose files to upload')
      .setInputFiles([{ name: 'résumé #1 & notes.txt', mimeType: 'text/plain', buffer: content }])
    await waitComplete(page, 'résumé #1 & notes.txt')
    const path = `${folder}/résumé #1 & notes.txt`
    expect(await summedRow(path)).toMatchObject({ md5: md5(content) })
    await shown(page.getByRole('cell', { name: 'résumé #1 & notes.txt' }))
    const [dl] = await Promise.all([
      page.waitForEvent('download', { timeout: 10_000 }),
      rowAction(page, 'résumé #1 & notes.txt', 'Download'),
    ])
    expect((await fs.readFile((await dl.path())!)).equals(content)).toBe(true)
    // Nothing wider than the phone: the table scrolls inside its own box.
    expect(
      await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth),
    ).toBeLessThanOrEqual(390)
    expectNoOutsideRequests(page)
    await page.context().close()
  })
})
