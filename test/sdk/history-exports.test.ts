import Files from 'files.com/lib/Files.js'
import HistoryExport from 'files.com/lib/models/HistoryExport.js'
import HistoryExportResult from 'files.com/lib/models/HistoryExportResult.js'
import { describe, expect, it, vi } from 'vitest'
import {
  csvRowOfHistory,
  fetchCsvRows,
  HISTORY_RESULT_FIELDS,
  recordAt,
  unique,
  upload,
} from '../helpers/history-export-fixtures.js'
import { dialects, grant, makeKey, makeUser, type TestServer } from '../helpers/server.js'
import { describeError, type Recorder, sdkError, sdkServer } from './sdk.js'

const DAY = 86_400_000

/** Polls with HistoryExport.find until the export leaves `building` (bounded; errors fail at once). */
const untilBuilt = (id: number): Promise<HistoryExport> =>
  vi.waitUntil(
    async () => {
      const e = await HistoryExport.find(id)
      return e.status !== 'building' && e
    },
    { timeout: 20_000, interval: 25 },
  )

describe.each(dialects)('files.com SDK: history exports (%s)', (dialect) => {
  let s: TestServer
  let rec: Recorder
  sdkServer(dialect, (server, recorder) => {
    s = server
    rec = recorder
  })

  it('creates an export with HistoryExport.create, polls it with find and lists every result', async () => {
    const folder = unique('sdkhx')
    const made = [
      await recordAt(s, 30 * DAY, upload(`${folder}/a.txt`, 5)),
      await recordAt(s, 2 * DAY, { action: 'read', display: 'Downloaded a.txt', path: `${folder}/a.txt` }),
      await recordAt(s, 1000, upload(`${folder}/b.txt`, 6)),
    ]
    Files.setApiKey(s.adminKey)
    const e = await HistoryExport.create({ query_folder: folder, query_action: 'create,read' })
    expect(e).toBeInstanceOf(HistoryExport)
    expect(e.getStatus()).toBe('building')
    expect(e.getQueryFolder()).toBe(folder)
    expect(rec.requests.at(-1)).toMatchObject({ method: 'POST', url: '/api/rest/v1/history_exports' })
    const ready = await untilBuilt(e.getId())
    expect(ready.getStatus()).toBe('ready')
    expect(ready.attributes['history_version']).toBe('1')

    rec.requests.length = 0
    const results = await HistoryExportResult.list({ history_export_id: e.getId(), per_page: 2 })
    expect(results.every((r) => r instanceof HistoryExportResult)).toBe(true)
    expect(results.map((r) => r.getId())).toEqual(made.map((m) => m.id))
    // Auto-pagination followed the cursor: two pages of two and one.
    const pages = rec.requests.map((r) => new URL(r.url, 'http://x').searchParams)
    expect(pages).toHaveLength(2)
    expect(pages[1]!.get('cursor')).toBeTruthy()
    const first = results[0]!
    expect(first.getCreatedAt()).toBe(Math.floor(made[0]!.at / 1000))
    expect(first.attributes['created_at_iso']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
    expect(first.getFileId()).toBe(5)
    expect(first.getUserIsFromParentSite()).toBe(false)
    expect(Object.keys(first.attributes)).toEqual(HISTORY_RESULT_FIELDS)

    const { rows } = await fetchCsvRows(ready.getResultsUrl()!)
    expect(rows.slice(1)).toEqual(results.map((r) => csvRowOfHistory(r.attributes)))
  })

  it('surfaces refusals as the SDK’s error classes', async () => {
    const folder = unique('sdkhx')
    const user = await makeUser(s)
    await grant(s, user.id, folder, 'admin')
    Files.setApiKey((await makeKey(s, user.id)).key)
    expect(describeError(await sdkError(HistoryExport.create({ query_action: 'login' })))).toEqual({
      className: 'NotAuthorized_NonAdminsMustQueryByFolderOrPathError',
      type: 'not-authorized/non-admins-must-query-by-folder-or-path',
      httpCode: 403,
    })
    expect(describeError(await sdkError(HistoryExport.create({ query_folder: 'elsewhere' })))).toEqual({
      className: 'NotAuthorized_FolderAdminPermissionRequiredError',
      type: 'not-authorized/folder-admin-permission-required',
      httpCode: 403,
    })
    const mine = await HistoryExport.create({ query_folder: folder })
    expect(mine.getUserId()).toBe(user.id)
    Files.setApiKey(s.adminKey)
    expect(describeError(await sdkError(HistoryExport.create({ query_target_platform: 'windows' })))).toEqual(
      {
        className: 'BadRequest_RequestParamsInvalidError',
        type: 'bad-request/request-params-invalid',
        httpCode: 400,
      },
    )
    expect(describeError(await sdkError(HistoryExport.find(999_999_999)))).toEqual({
      className: 'NotFoundError',
      type: 'not-found',
      httpCode: 404,
    })
  })
})
