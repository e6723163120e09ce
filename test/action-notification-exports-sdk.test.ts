import crypto from 'node:crypto'
import { createRequire } from 'node:module'
import Files from 'files.com/lib/Files.js'
import { describe, expect, it, vi } from 'vitest'
import { dialects, grant, makeKey, makeUser, type TestServer } from './helpers/server.js'
import {
  expectCsvMatches,
  expectedResult,
  JSON_RESULT_FIELDS,
  seedLog,
} from './helpers/webhook-log-fixtures.js'
import { describeError, type Recorder, sdkError, sdkServer } from './sdk/sdk.js'

/** The webhook-log exports through the official `files.com` SDK, as a customer's script uses them. */

// The SDK is CommonJS and untyped: its two export models, typed here for what the tests use.
interface SdkExport {
  readonly attributes: Record<string, any>
  readonly id: number
  readonly status: string
  readonly results_url: string | null
  readonly query_folder: string | null
  readonly query_status: string | null
  readonly query_success: boolean | null
  readonly user_id: number | null
  getId(): number
  getStatus(): string
  getResultsUrl(): string | null
}
interface SdkExportClass {
  new (attributes?: Record<string, unknown>, options?: Record<string, unknown>): SdkExport
  create(params?: Record<string, unknown>, options?: Record<string, unknown>): Promise<SdkExport>
  find(id: number, params?: Record<string, unknown>, options?: Record<string, unknown>): Promise<SdkExport>
  get(id: number, params?: Record<string, unknown>, options?: Record<string, unknown>): Promise<SdkExport>
}
interface SdkResult {
  readonly attributes: Record<string, any>
  readonly id: number
  getCreatedAt(): number
  getSuccess(): boolean
  getPath(): string
}
interface SdkResultClass {
  new (attributes?: Record<string, unknown>): SdkResult
  list(params: Record<string, unknown>, options?: Record<string, unknown>): Promise<SdkResult[]>
  all(params: Record<string, unknown>, options?: Record<string, unknown>): Promise<SdkResult[]>
}
const require = createRequire(import.meta.url)
const ActionNotificationExport: SdkExportClass = require('files.com/lib/models/ActionNotificationExport.js')
const ActionNotificationExportResult: SdkResultClass = require('files.com/lib/models/ActionNotificationExportResult.js')

const tag = (p: string) => `${p}-${crypto.randomBytes(4).toString('hex')}`

describe.each(dialects)('files.com SDK: webhook-log exports (%s)', (dialect) => {
  let s: TestServer
  let rec: Recorder
  sdkServer(dialect, (server, recorder) => {
    s = server
    rec = recorder
  })

  /** ActionNotificationExport.find until the export is no longer building (bounded). */
  const untilDone = (id: number, options: Record<string, unknown> = {}): Promise<SdkExport> =>
    vi.waitUntil(
      async () => {
        const e = await ActionNotificationExport.find(id, {}, options)
        return e.status !== 'building' && e
      },
      { timeout: 20_000, interval: 25 },
    )

  it('creates an export, polls it to ready and lists every result across pages', async () => {
    const folder = tag('sdk')
    const seeded = await seedLog(s, [
      { path: `${folder}/a.txt`, createdAt: Date.now() - 3000 },
      { path: `${folder}/b.txt`, status: 500, success: false, message: 'HTTP 500 Internal Server Error' },
      { path: `${folder}/sub/c.txt`, status: 7, success: false, message: 'Connection refused' },
      { path: `${folder}/sub/d.txt`, status: 204, message: 'No Content', success: true },
      { path: `${folder}-other/e.txt` },
    ])
    Files.setApiKey(s.adminKey)
    const created = await ActionNotificationExport.create({ query_folder: folder })
    expect(created).toBeInstanceOf(ActionNotificationExport)
    expect(created.id).toEqual(expect.any(Number))
    expect(created.getStatus()).toBe('building')
    expect(created.query_folder).toBe(folder)
    expect(created.results_url).toBeNull()
    const post = rec.requests.find((r) => r.method === 'POST')!
    expect(post.url).toBe('/api/rest/v1/action_notification_exports')
    expect(JSON.parse(post.body)).toEqual({ query_folder: folder })

    const ready = await untilDone(created.getId())
    expect(ready.status).toBe('ready')
    expect(ready.getResultsUrl()).toMatch(/^https?:\/\//)
    expect(ready.attributes['export_version']).toBe('1')
    expect(rec.requests.at(-1)!.url).toBe(
      `/api/rest/v1/action_notification_exports/${created.id}?id=${created.id}`,
    )

    rec.requests.length = 0
    const results = await ActionNotificationExportResult.list({
      action_notification_export_id: created.id,
      per_page: 2,
    })
    expect(results.every((r) => r instanceof ActionNotificationExportResult)).toBe(true)
    const expected = seeded.slice(0, 4).map(expectedResult)
    expect(results.map((r) => r.attributes)).toEqual(expected)
    // Auto-pagination followed the cursor: two pages of 2, the last without a cursor.
    const gets = rec.requests.map((r) => new URL(r.url, 'http://x').searchParams)
    expect(gets).toHaveLength(2)
    expect(gets.map((q) => q.get('page'))).toEqual([null, '2'])
    expect(gets[1]!.get('cursor')).toEqual(expect.any(String))
    expect(gets.every((q) => q.get('action_notification_export_id') === String(created.id))).toBe(true)

    const first = results[0]!
    expect(first.getCreatedAt()).toBe(Math.floor(seeded[0]!.created_at / 1000))
    expect(first.getSuccess()).toBe(true)
    expect(first.getPath()).toBe(`${folder}/a.txt`)
    for (const r of results) {
      const a = r.attributes
      expect(Object.keys(a)).toEqual([...JSON_RESULT_FIELDS])
      expect(typeof a['id']).toBe('number')
      expect(Number.isInteger(a['created_at'])).toBe(true)
      expect(typeof a['status']).toBe('number')
      expect(typeof a['success']).toBe('boolean')
      expect(typeof a['attempt']).toBe('number')
      expect(typeof a['response_size']).toBe('number')
      for (const f of [
        'message',
        'request_headers',
        'request_method',
        'request_url',
        'path',
        'folder',
        'operation',
      ])
        expect(typeof a[f], f).toBe('string')
      expect(JSON.parse(a['request_headers'])['Content-Type']).toBe('application/json')
    }
    await expectCsvMatches(ready.getResultsUrl()!, expected)
  })

  it('saves a new export with save() and reads it with get()', async () => {
    const folder = tag('save')
    await seedLog(s, [
      { path: `${folder}/x.txt`, status: 28, success: false, message: 'Connect timed out after 5000 ms' },
    ])
    Files.setApiKey(s.adminKey)
    const e = new ActionNotificationExport({
      query_folder: folder,
      query_status: '28,7',
      query_success: false,
    })
    expect(await (e as any).save()).toBe(true)
    const id = (e as any).attributes.id as number
    expect(id).toEqual(expect.any(Number))
    const ready = await untilDone(id)
    const again = await ActionNotificationExport.get(id)
    expect(again.attributes).toMatchObject({
      id,
      query_status: '28,7',
      query_success: false,
      status: ready.status,
    })
    const all = await ActionNotificationExportResult.all({ action_notification_export_id: id })
    expect(all.map((r) => r.attributes['path'])).toEqual([`${folder}/x.txt`])
  })

  it('works for a folder admin’s own key, within their folder', async () => {
    const folder = tag('fadmin')
    const u = await makeUser(s)
    await grant(s, u.id, folder, 'admin')
    const key = (await makeKey(s, u.id)).key
    const seeded = await seedLog(s, [{ path: `${folder}/mine.txt` }])
    const e = await ActionNotificationExport.create({ query_folder: folder }, { apiKey: key })
    expect(e.user_id).toBe(u.id)
    await untilDone(e.id, { apiKey: key })
    const list = await ActionNotificationExportResult.list(
      { action_notification_export_id: e.id },
      { apiKey: key },
    )
    expect(list.map((r) => r.id)).toEqual([seeded[0]!.id])
    const refused = await sdkError(
      ActionNotificationExport.create({ query_folder: `${folder}-not` }, { apiKey: key }),
    )
    expect(describeError(refused)).toEqual({
      className: 'NotAuthorized_FolderAdminPermissionRequiredError',
      type: 'not-authorized/folder-admin-permission-required',
      httpCode: 403,
    })
  })

  it('surfaces refusals as the SDK’s error classes', async () => {
    Files.setApiKey(s.adminKey)
    expect(describeError(await sdkError(ActionNotificationExport.find(99_999_999)))).toEqual({
      className: 'NotFoundError',
      type: 'not-found',
      httpCode: 404,
    })
    expect(describeError(await sdkError(ActionNotificationExport.create({ start_at: 'soon' })))).toEqual({
      className: 'BadRequest_DatetimeParseError',
      type: 'bad-request/datetime-parse',
      httpCode: 400,
    })
    expect(
      describeError(await sdkError(ActionNotificationExport.create({ query_status: 'teapot' }))),
    ).toEqual({
      className: 'BadRequest_RequestParamsInvalidError',
      type: 'bad-request/request-params-invalid',
      httpCode: 400,
    })
    expect(
      describeError(
        await sdkError(ActionNotificationExportResult.list({ action_notification_export_id: 99_999_999 })),
      ),
    ).toEqual({ className: 'NotFoundError', type: 'not-found', httpCode: 404 })
    Files.setApiKey('0123456789abcdef'.repeat(4))
    expect(describeError(await sdkError(ActionNotificationExport.create({ query_folder: 'x' })))).toEqual({
      className: 'NotAuthenticated_AuthenticationRequiredError',
      type: 'not-authenticated/authentication-required',
      httpCode: 401,
    })
  })
})
