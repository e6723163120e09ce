import fs from 'node:fs/promises'
import { parse } from 'csv-parse/sync'
import type { Browser, Page } from 'playwright-core'
import { beforeAll, describe, expect, it } from 'vitest'
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
import { recordAt, upload } from '../helpers/history-export-fixtures.js'
import { overflowing } from '../helpers/phone-layout.js'
import { call, grant, makeKey, makeUser, type TestServer, type TestUser } from '../helpers/server.js'

const HOUR = 3_600_000
const DAY = 24 * HOUR

async function openHistory(
  browser: Browser,
  s: TestServer,
  user?: TestUser,
  hash = '#/history',
  viewport?: { width: number; height: number },
) {
  const page = await newPage(browser, s, viewport)
  page.setDefaultTimeout(10_000)
  await signIn(page, s, user?.username, user?.password)
  await page.goto(`${s.url}/${hash}`)
  await shown(page.getByRole('heading', { level: 1, name: 'History' }))
  return page
}

/** The action ids of the table's rows, once it has settled on `count` rows. */
async function shownIds(page: Page, count?: number): Promise<number[]> {
  const rows = page.locator('tbody tr[data-action-id]')
  if (count !== undefined) await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(count)
  else await shown(rows)
  return (await rows.evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute('data-action-id'))))).sort(
    (a, b) => a - b,
  )
}

/** The last 24 hours of actions the database holds that `where` keeps, as ids. */
async function recentIds(
  s: TestServer,
  where: (a: { user_id: number | null; folder: string; path: string }) => boolean,
) {
  const rows = await s.container.db
    .selectFrom('actions')
    .select(['id', 'user_id', 'folder', 'path'])
    .where('created_at', '>', s.container.now() - DAY)
    .execute()
  return rows
    .filter(where)
    .map((r) => r.id)
    .sort((a, b) => a - b)
}

async function mkdir(s: TestServer, key: string, path: string) {
  const r = await call(s, 'POST', `/folders/${path}`, { key })
  expect(r.status, r.text).toBeLessThan(300)
}

describe.skipIf(!hasBrowser)('web interface: history', BROWSER_SUITE, () => {
  const web = webSuite()
  let alice: TestUser
  beforeAll(async () => {
    alice = await makeUser(web.s, { username: 'alice' })
    await grant(web.s, alice.id, 'proj', 'full')
    const aliceKey = await makeKey(web.s, alice.id)
    // Actions done through the API: the admin's folders, and alice's inside proj.
    await mkdir(web.s, web.s.adminKey, 'proj')
    await mkdir(web.s, web.s.adminKey, 'other')
    await mkdir(web.s, aliceKey.key, 'proj/a')
    await mkdir(web.s, aliceKey.key, 'proj/b')
    await mkdir(web.s, web.s.adminKey, 'proj/c')
  })

  it('shows a site admin the last 24 hours and narrows them by user, folder, path and time', async () => {
    const page = await openHistory(web.browser, web.s)
    const everything = await recentIds(web.s, () => true)
    expect(await shownIds(page, everything.length)).toEqual(everything)
    const aliceRow = page.locator('tbody tr').filter({ hasText: 'proj/a' }).first()
    const cells = await aliceRow.locator('td').allInnerTexts()
    expect(cells.slice(1, 5)).toEqual(['alice', 'create', 'proj/a', 'restapi'])

    // By user: exactly alice's actions.
    await page.getByLabel('User').selectOption({ label: 'alice' })
    await page.getByRole('button', { name: 'Show history' }).click()
    const byAlice = await recentIds(web.s, (a) => a.user_id === alice.id)
    expect(byAlice.length).toBe(2)
    expect(await shownIds(page, byAlice.length)).toEqual(byAlice)
    expect(page.url()).toContain(`user_id=${alice.id}`)

    // By folder (its direct contents) for anyone: alice's two and the admin's one.
    await page.getByLabel('User').selectOption({ label: 'Anyone' })
    await page.getByLabel('Folder (its direct contents)').fill('proj')
    await page.getByRole('button', { name: 'Show history' }).click()
    const inProj = await recentIds(web.s, (a) => a.folder === 'proj')
    expect(inProj.length).toBe(3)
    expect(await shownIds(page, 3)).toEqual(inProj)

    // By path with a wildcard, and the folder cleared.
    await page.getByLabel('Folder (its direct contents)').fill('')
    await page.getByLabel('Path (exact; % is a wildcard)').fill('other%')
    await page.getByRole('button', { name: 'Show history' }).click()
    const other = await recentIds(web.s, (a) => a.path.startsWith('other'))
    expect(await shownIds(page, other.length)).toEqual(other)

    // By time: of two actions an hour apart, From between them keeps the later one.
    const early = await recordAt(web.s, 3 * HOUR, upload('timed/early.txt'))
    const late = await recordAt(web.s, HOUR, upload('timed/late.txt'))
    await page.getByLabel('Path (exact; % is a wildcard)').fill('timed/%')
    await page.getByRole('button', { name: 'Show history' }).click()
    expect(await shownIds(page, 2)).toEqual([early.id, late.id])
    const between = await page.evaluate(
      (ms) => {
        const d = new Date(ms)
        const p = (n: number) => String(n).padStart(2, '0')
        return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`
      },
      web.s.container.now() - 2 * HOUR,
    )
    await page.getByLabel('From').fill(between)
    await page.getByRole('button', { name: 'Show history' }).click()
    expect(await shownIds(page, 1)).toEqual([late.id])
    expectNoOutsideRequests(page)
    await page.context().close()
  })

  it('pages with Load more until every row is shown, at phone width', async () => {
    const ids: number[] = []
    for (let i = 0; i < 30; i++) ids.push((await recordAt(web.s, 60_000 + i, upload(`bulk/f${i}.txt`))).id)
    const page = await openHistory(
      web.browser,
      web.s,
      undefined,
      '#/history?scope=site&folder=bulk&per_page=25',
      {
        width: 390,
        height: 844,
      },
    )
    expect((await shownIds(page, 25)).length).toBe(25)
    await page.getByRole('button', { name: 'Load more' }).click()
    expect(await shownIds(page, 30)).toEqual(ids.sort((a, b) => a - b))
    await shown(page.getByText('30 actions, all shown.'))
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0)
    // Only the table scrolls sideways; the filters and the export wrap to the screen.
    const wide = await overflowing(page)
    expect(wide).toEqual([])
    await page.context().close()
  })

  it('gives other users the history of what they may read, and says why the rest is refused', async () => {
    const bob = await makeUser(web.s)
    await grant(web.s, bob.id, 'shared', 'readonly')
    const inShared = await recordAt(web.s, 5 * 60_000, upload('shared/doc.txt'))
    const deeper = await recordAt(web.s, 4 * 60_000, upload('shared/sub/deep.txt'))
    await recordAt(web.s, 3 * 60_000, upload('secret/plan.txt'))
    const page = await openHistory(web.browser, web.s, bob)
    // Nothing is asked for until bob names a folder; the whole site is not offered to him.
    await shown(page.getByText('Enter a folder you can read'))
    expect(await page.locator('option[value="site"]').isDisabled()).toBe(true)

    await page.getByLabel('Folder path (empty: the root folder)').fill('shared')
    await page.getByRole('button', { name: 'Show history' }).click()
    const shared = await recentIds(web.s, (a) => a.path === 'shared' || a.path.startsWith('shared/'))
    expect(shared).toEqual(expect.arrayContaining([inShared.id, deeper.id]))
    expect(await shownIds(page, shared.length)).toEqual(shared)
    // Exports are for the folders one administers: bob only reads this one.
    await page.getByRole('button', { name: 'Export full history' }).click()
    expect(await textOf(page.getByRole('alert'))).toBe('Folder admin permission is required on shared')
    expect(
      await web.s.container.db.selectFrom('exports').select('id').where('user_id', '=', bob.id).execute(),
    ).toEqual([])

    await page.getByLabel('Show').selectOption('file')
    await page.getByLabel('File path').fill('shared/doc.txt')
    await page.getByRole('button', { name: 'Show history' }).click()
    expect(await shownIds(page, 1)).toEqual([inShared.id])

    await page.getByLabel('Show').selectOption('folder')
    await page.getByLabel('Folder path (empty: the root folder)').fill('secret')
    await page.getByRole('button', { name: 'Show history' }).click()
    expect(await textOf(page.getByRole('alert'))).toBe(
      'You may not see the history of “secret”: you need read or history permission on it.',
    )
    expect(await page.locator('tbody tr').count()).toBe(0)

    // The whole site's list, asked for by address, is refused by the API: the page says so.
    await page.goto(`${web.s.url}/#/history?scope=site`)
    expect(await textOf(page.getByRole('alert'))).toBe(
      'Only site administrators can see the whole site’s history. Choose a folder or a file you can read instead.',
    )
    await page.context().close()
  })

  it('exports the full history, older than 24 hours too, and downloads it as CSV', async () => {
    const old = await recordAt(web.s, 3 * DAY, upload('archive/old.txt'), { user: alice })
    const recent = await recordAt(web.s, 10 * 60_000, upload('archive/new.txt'))
    await recordAt(web.s, 2 * DAY, upload('elsewhere/x.txt'))
    const page = await openHistory(web.browser, web.s, undefined, '#/history?scope=site&folder=archive')
    // The table stops at 24 hours.
    expect(await shownIds(page, 1)).toEqual([recent.id])

    await page.getByRole('button', { name: 'Export full history' }).click()
    const link = page.getByRole('link', { name: 'Download CSV' })
    await shown(link, 15_000)
    expect(await textOf(page.locator('.export-result'))).toContain('Export ready: 2 actions.')
    const made = await web.s.container.db
      .selectFrom('exports')
      .selectAll()
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow()
    expect(made).toMatchObject({ kind: 'history', status: 'ready', result_count: 2 })
    expect(JSON.parse(made.query)).toMatchObject({
      query_folder: 'archive',
      query_path: null,
      query_user_id: null,
    })

    const [download] = await Promise.all([page.waitForEvent('download', { timeout: 10_000 }), link.click()])
    const file = await download.path()
    const rows = parse(await fs.readFile(file, 'utf8'), { columns: true }) as Record<string, string>[]
    expect(rows.map((r) => [Number(r['id']), r['path'], r['username']])).toEqual([
      [old.id, 'archive/old.txt', 'alice'],
      [recent.id, 'archive/new.txt', ''],
    ])
    expectNoOutsideRequests(page)
    await page.context().close()
  })
})
