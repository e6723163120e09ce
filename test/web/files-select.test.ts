import { execFileSync } from 'node:child_process'
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
import { rowAction } from '../helpers/files-page.js'
import { call } from '../helpers/server.js'

const PHONE = { width: 390, height: 844 }
/** A 1×1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
)

describe.skipIf(!hasBrowser)('web interface: selecting, the row menu and previews', BROWSER_SUITE, () => {
  const web = webSuite({ LOGIN_DEFENDER_THRESHOLD: '100000' })

  const exists = async (path: string) =>
    (await web.s.container.db
      .selectFrom('files')
      .select('id')
      .where('path', '=', path)
      .executeTakeFirst()) !== undefined

  async function freshPage(viewport?: { width: number; height: number }): Promise<Page> {
    const page = await newPage(web.browser, web.s, viewport)
    page.setDefaultTimeout(10_000)
    await signIn(page, web.s)
    return page
  }
  async function openFolder(page: Page, folder: string) {
    await page.goto(`${web.s.url}/#/files/${encodeURIComponent(folder)}`)
    await shown(page.getByRole('heading', { level: 1, name: 'Files' }))
  }
  const checked = (page: Page) =>
    page
      .locator('tbody input[type=checkbox]:checked')
      .evaluateAll((els: any[]) =>
        els.map((e) => String(e.getAttribute('aria-label')).replace(/^Select /, '')),
      )
  const focused = (page: Page) =>
    page.evaluate(() => {
      const el = (globalThis as any).document.activeElement
      return String(el?.getAttribute('aria-label') ?? el?.textContent ?? '')
    })

  for (const [label, viewport] of [
    ['desktop', undefined],
    ['phone', PHONE],
  ] as const) {
    it(`selects a range with shift-click, then moves and deletes the selection (${label})`, async () => {
      const dir = `pick-${label}`
      for (const n of ['a', 'b', 'c', 'd', 'e']) await uploaded(web.s, `${dir}/${n}.txt`, n)
      await call(web.s, 'POST', `/folders/${dir}/into`, { key: web.s.adminKey })
      const page = await freshPage(viewport)
      await openFolder(page, dir)
      await shown(page.getByLabel('Select e.txt'))
      expect(await page.getByRole('region', { name: 'Selection' }).count()).toBe(0)

      await page.getByLabel('Select b.txt').click()
      await page.getByLabel('Select d.txt').click({ modifiers: ['Shift'] })
      expect(await checked(page)).toEqual(['b.txt', 'c.txt', 'd.txt'])
      const bar = page.getByRole('region', { name: 'Selection' })
      expect(await textOf(bar.getByRole('status'))).toBe('3 selected')
      // Shift-click on a selected one unselects the range from the last one clicked (d) to it.
      await page.getByLabel('Select c.txt').click({ modifiers: ['Shift'] })
      expect(await checked(page)).toEqual(['b.txt'])
      await page.getByLabel('Select d.txt').click({ modifiers: ['Shift'] })
      expect(await checked(page)).toEqual(['b.txt', 'c.txt', 'd.txt'])

      await bar.getByRole('button', { name: 'Move selected' }).click()
      const move = page.getByRole('dialog', { name: 'Move 3 items' })
      await move.getByLabel('Move into folder (full path)').fill(`${dir}/into`)
      await move.getByRole('button', { name: 'Move' }).click()
      await shown(page.getByRole('status').filter({ hasText: `Moved 3 of 3 to ${dir}/into` }))
      for (const n of ['b', 'c', 'd']) {
        expect(await exists(`${dir}/into/${n}.txt`)).toBe(true)
        expect(await exists(`${dir}/${n}.txt`)).toBe(false)
      }
      await expect.poll(() => page.locator('tbody tr').count()).toBe(3)
      expect(await checked(page)).toEqual([])

      // Select all, then leave the folder out: its two files are deleted together.
      await page.getByLabel('Select all').check()
      expect(await checked(page)).toEqual(['a.txt', 'e.txt', 'into'])
      await page.getByLabel('Select into').click()
      expect(await page.getByLabel('Select all').isChecked()).toBe(false)
      await bar.getByRole('button', { name: 'Delete selected' }).click()
      const del = page.getByRole('dialog', { name: 'Delete 2 items?' })
      expect(await textOf(del)).toContain(`${dir}/a.txt`)
      await del.getByRole('button', { name: 'Delete' }).click()
      await shown(page.getByRole('status').filter({ hasText: 'Deleted 2 of 2' }))
      expect(await exists(`${dir}/a.txt`)).toBe(false)
      expect(await exists(`${dir}/e.txt`)).toBe(false)
      expect(await exists(`${dir}/into/b.txt`)).toBe(true)
      await page.context().close()
    })
  }

  it('lists what was refused in a bulk move and leaves the rest done', async () => {
    await uploaded(web.s, 'clash/one.txt', '1')
    await uploaded(web.s, 'clash/to/two.txt', '2')
    const page = await freshPage()
    await openFolder(page, 'clash')
    await page.getByLabel('Select one.txt').click()
    await page.getByLabel('Select to').click()
    await page.getByRole('button', { name: 'Move selected' }).click()
    const move = page.getByRole('dialog', { name: 'Move 2 items' })
    // The folder cannot go into itself; the file can.
    await move.getByLabel('Move into folder (full path)').fill('clash/to')
    await move.getByRole('button', { name: 'Move' }).click()
    const alert = move.getByRole('alert')
    expect(await textOf(alert)).toMatch(/^Not done:\s*clash\/to: /)
    expect(await textOf(alert)).not.toContain('one.txt')
    await shown(page.getByRole('status').filter({ hasText: 'Moved 1 of 2 to clash/to' }))
    expect(await exists('clash/to/one.txt')).toBe(true)
    expect(await exists('clash/to/two.txt')).toBe(true)
    expect(await exists('clash/to/to')).toBe(false)
    await move.getByRole('button', { name: 'Close' }).click()
    await page.context().close()
  })

  it('works the row menu and its dialogs with the keyboard alone', async () => {
    await uploaded(web.s, 'keys/notes.txt', 'notes')
    const page = await freshPage()
    await openFolder(page, 'keys')
    const button = page.getByRole('button', { name: 'Actions for notes.txt' })
    await button.focus()
    await page.keyboard.press('Enter')
    const menu = page.getByRole('menu', { name: 'Actions for notes.txt' })
    await shown(menu)
    expect(await button.getAttribute('aria-expanded')).toBe('true')
    await expect.poll(() => focused(page)).toBe('Preview')
    await page.keyboard.press('ArrowDown')
    await expect.poll(() => focused(page)).toBe('Download')
    await page.keyboard.press('End')
    await expect.poll(() => focused(page)).toBe('Delete')
    await page.keyboard.press('ArrowDown')
    await expect.poll(() => focused(page)).toBe('Preview')
    await page.keyboard.press('Escape')
    await expect.poll(() => menu.count()).toBe(0)
    await expect.poll(() => focused(page)).toBe('Actions for notes.txt')

    // Arrow up opens it at its last item; Enter chooses it.
    await page.keyboard.press('ArrowUp')
    await expect.poll(() => focused(page)).toBe('Delete')
    await page.keyboard.press('ArrowUp')
    await page.keyboard.press('ArrowUp')
    await expect.poll(() => focused(page)).toBe('Move')
    await page.keyboard.press('Enter')
    const dialog = page.getByRole('dialog', { name: 'Move notes.txt' })
    await shown(dialog)
    // The focus stays inside the dialog however far it is tabbed.
    for (let i = 0; i < 6; i++) {
      await page.keyboard.press('Tab')
      expect(await dialog.evaluate((d: any) => d.contains((globalThis as any).document.activeElement))).toBe(
        true,
      )
    }
    await page.keyboard.press('Escape')
    await expect.poll(() => dialog.count()).toBe(0)
    expect(await exists('keys/notes.txt')).toBe(true)

    // A click elsewhere closes an open menu.
    await button.click()
    await shown(menu)
    await page.getByRole('heading', { level: 1, name: 'Files' }).click()
    await expect.poll(() => menu.count()).toBe(0)
    await page.context().close()
  })

  for (const [label, viewport] of [
    ['desktop', undefined],
    ['phone', PHONE],
  ] as const) {
    it(`previews an image and the start of a long text file (${label})`, async () => {
      const dir = `look-${label}`
      await uploaded(web.s, `${dir}/pixel.png`, PNG)
      const line = 'the quick brown fox jumps over the lazy dog 0123456789\n'
      const long = line.repeat(Math.ceil((300 * 1024) / line.length))
      await uploaded(web.s, `${dir}/long.txt`, long)
      await uploaded(web.s, `${dir}/data.bin`, Buffer.from([0, 1, 2]))
      const page = await freshPage(viewport)
      const ranges: string[] = []
      page.on('request', (r) => {
        const range = r.headers()['range']
        if (range) ranges.push(range)
      })
      await openFolder(page, dir)

      await page.getByRole('button', { name: 'pixel.png', exact: true }).click()
      const image = page.getByRole('dialog', { name: 'pixel.png' })
      const img = image.getByRole('img', { name: 'Preview of pixel.png' })
      await shown(img)
      await expect.poll(() => img.evaluate((i: any) => i.complete && i.naturalWidth)).toBe(1)
      await image.getByRole('button', { name: 'Close' }).click()
      await expect.poll(() => image.count()).toBe(0)

      await rowAction(page, 'long.txt', 'Preview')
      const text = page.getByRole('dialog', { name: 'long.txt' })
      const pre = text.getByTestId('text-preview')
      await shown(pre)
      const shownText = await pre.evaluate((p: any) => String(p.textContent))
      expect(shownText.length).toBe(256 * 1024)
      expect(long.startsWith(shownText)).toBe(true)
      expect(await textOf(text)).toContain('Only the first 256 KiB are shown.')
      expect(ranges).toEqual([`bytes=0-${256 * 1024 - 1}`])
      await page.keyboard.press('Escape')
      await expect.poll(() => text.count()).toBe(0)

      // A file of no previewable kind is offered no preview.
      await shown(page.getByText('data.bin'))
      expect(await page.getByRole('button', { name: 'data.bin', exact: true }).count()).toBe(0)
      await page.getByRole('button', { name: 'Actions for data.bin' }).click()
      expect(await page.getByRole('menuitem', { name: 'Preview' }).count()).toBe(0)
      if (viewport) {
        expect(
          await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth),
        ).toBeLessThanOrEqual(PHONE.width)
      }
      await page.context().close()
    })
  }

  it('downloads the selection as one ZIP, folders with what is inside them, recorded as web reads', async () => {
    const dir = 'zip-pick'
    await uploaded(web.s, `${dir}/one.txt`, 'first')
    await uploaded(web.s, `${dir}/two.txt`, 'second')
    await uploaded(web.s, `${dir}/inner/three.txt`, 'third')
    const page = await freshPage()
    await openFolder(page, dir)
    await page.getByLabel('Select one.txt').click()
    await page.getByLabel('Select inner').click()
    const [zip] = await Promise.all([
      page.waitForEvent('download', { timeout: 10_000 }),
      page.getByRole('button', { name: 'Download as ZIP' }).click(),
    ])
    expect(zip.suggestedFilename()).toBe(`${dir}.zip`)
    const file = (await zip.path())!
    const names = execFileSync('unzip', ['-Z1', file]).toString().split('\n').filter(Boolean).sort()
    expect(names).toEqual(['inner/', 'inner/three.txt', 'one.txt'])
    expect(execFileSync('unzip', ['-p', file, 'inner/three.txt']).toString()).toBe('third')
    const reads = await web.s.container.db
      .selectFrom('actions')
      .select(['path', 'interface'])
      .where('action', '=', 'read')
      .where('path', 'like', `${dir}/%`)
      .orderBy('path')
      .execute()
    expect(reads).toEqual([
      { path: `${dir}/inner/three.txt`, interface: 'web' },
      { path: `${dir}/one.txt`, interface: 'web' },
    ])
    expectNoOutsideRequests(page)
    await page.context().close()
  })
})
