import { beforeAll, describe, expect, it } from 'vitest'
import { call, dialects, expectError, useServer } from './helpers/server.js'
import {
  createExport,
  EXPORT_FIELDS,
  exportIds,
  iso,
  type LogRecord,
  pollExport,
  type SeededRecord,
  seedLog,
} from './helpers/webhook-log-fixtures.js'

/**
 * The export query: each field alone, together (AND), with comma-separated values (OR), and the
 * ways of sending it. The server holds only the dataset below, so every expected set is exact.
 */

const T0 = Date.UTC(2026, 0, 10, 0, 0, 0)
const H = 3600_000
const U1 = 'https://hooks.example.com/in'
const U2 = 'https://hooks.example.com/in?x=1'
const U3 = 'https://other.example.net/hook'

const DATASET: Record<string, LogRecord> = {
  aOne: { path: 'a/one.txt', status: 200, success: true, message: 'OK', url: U1, createdAt: T0 },
  aSubTwo: {
    path: 'a/sub/two.txt',
    status: 204,
    success: true,
    message: 'No Content',
    url: U1,
    createdAt: T0 + H,
  },
  abThree: {
    path: 'ab/three.txt',
    status: 500,
    success: false,
    message: 'HTTP 500 Internal Server Error',
    url: U2,
    createdAt: T0 + 2 * H,
  },
  upper: {
    path: 'A/Upper.TXT',
    status: 200,
    success: true,
    message: 'OK',
    url: U1,
    createdAt: T0 + 3 * H,
  },
  bRefused: {
    path: 'b/five.txt',
    status: 7,
    success: false,
    message: 'Connection refused',
    url: U2,
    createdAt: T0 + 4 * H,
  },
  bTimeout: {
    path: 'b/six.txt',
    status: 28,
    success: false,
    message: 'Connect timed out after 5000 ms',
    method: 'GET',
    url: U3,
    createdAt: T0 + 5 * H,
  },
  folderA: {
    path: 'a',
    operation: 'Create Folder',
    status: 200,
    success: true,
    message: 'OK',
    url: U1,
    createdAt: T0 + 6 * H,
  },
  aDotTxt: {
    path: 'a.txt',
    status: 404,
    success: false,
    message: 'HTTP 404 Not Found',
    url: U3,
    createdAt: T0 + 7 * H,
  },
  cNotFound: {
    path: 'c/x,y é.txt',
    status: 404,
    success: false,
    message: 'HTTP 404 Not Found',
    url: U1,
    createdAt: T0 + 8 * H,
    attempt: 3,
  },
  cRetried: {
    path: 'c/x,y é.txt',
    status: 500,
    success: false,
    message: 'HTTP 500 internal server error',
    method: 'post',
    url: U1,
    createdAt: T0 + 9 * H,
    attempt: 4,
  },
}
type Label = keyof typeof DATASET
const ALL = Object.keys(DATASET) as Label[]

describe.each(dialects)('webhook-log exports: the query (%s)', (dialect) => {
  const seeded = new Map<Label, SeededRecord>()
  const id = (l: Label) => seeded.get(l)!.id
  /** Ids of these labels in log order (the results' order). */
  const ids = (...labels: Label[]) => labels.map(id).sort((a, b) => a - b)
  const run = (body: Record<string, unknown>) => exportIds(s, body)

  const s = useServer(dialect)
  beforeAll(async () => {
    const rows = await seedLog(
      s,
      ALL.map((l) => DATASET[l]!),
    )
    for (const [i, l] of ALL.entries()) seeded.set(l, rows[i]!)
  })

  it('creates with 201 and status building, echoing the query, then reads it back ready', async () => {
    const body = {
      start_at: '2026-01-10T00:00:00Z',
      end_at: '2026-01-11T00:00:00Z',
      query_message: 'timed out',
      query_request_method: 'GET',
      query_request_url: U3,
      query_status: '28',
      query_path: 'b/six.txt',
      query_folder: 'b',
      query_success: false,
    }
    const r = await createExport(s, body, { key: s.adminKey })
    expect(r.status, r.text).toBe(201)
    expect(Object.keys(r.body).sort()).toEqual([...EXPORT_FIELDS].sort())
    expect(r.body).toEqual({
      ...body,
      id: expect.any(Number),
      export_version: '1',
      status: 'building',
      results_url: null,
      user_id: null,
      failure_reason: null,
      results_count: null,
      query_behavior_id: null,
    })
    const done = await pollExport(s, r.body.id, { key: s.adminKey })
    expect(done).toEqual({
      ...r.body,
      status: 'ready',
      results_url: expect.stringMatching(/^http:\/\//),
      results_count: ids('bTimeout').length,
    })
    expect(done.results_url.startsWith(`${s.url}/`)).toBe(true)
    const results = await call(
      s,
      'GET',
      `/action_notification_export_results?action_notification_export_id=${r.body.id}`,
      { key: s.adminKey },
    )
    expect(results.body.map((x: any) => x.id)).toEqual(ids('bTimeout'))
  })

  it('leaves absent query fields null and matches every record of the site', async () => {
    const r = await createExport(s, {}, { key: s.adminKey })
    expect(r.status, r.text).toBe(201)
    for (const f of ['start_at', 'end_at', 'query_path', 'query_folder', 'query_status', 'query_success'])
      expect(r.body[f], f).toBeNull()
    expect(await run({})).toEqual(ids(...ALL))
  })

  it('takes start_at inclusive and end_at exclusive, on the send time', async () => {
    expect(await run({ start_at: iso(T0 + 2 * H) })).toEqual(
      ids('abThree', 'upper', 'bRefused', 'bTimeout', 'folderA', 'aDotTxt', 'cNotFound', 'cRetried'),
    )
    expect(await run({ end_at: iso(T0 + 2 * H) })).toEqual(ids('aOne', 'aSubTwo'))
    expect(await run({ start_at: iso(T0 + H), end_at: iso(T0 + 3 * H) })).toEqual(ids('aSubTwo', 'abThree'))
    // A second past a record's time leaves it out; an offset is honoured; a date alone is midnight UTC.
    expect(await run({ start_at: iso(T0 + 9 * H + 1000) })).toEqual([])
    expect(await run({ start_at: '2026-01-10T06:00:00+02:00', end_at: '2026-01-10T07:00:00+01:00' })).toEqual(
      ids('bRefused', 'bTimeout'),
    )
    expect(await run({ start_at: '2026-01-10', end_at: '2026-01-11' })).toEqual(ids(...ALL))
    expect(await run({ end_at: '2026-01-10' })).toEqual([])
  })

  it('matches query_path exactly, ignoring case and outer slashes', async () => {
    expect(await run({ query_path: 'a/one.txt' })).toEqual(ids('aOne'))
    expect(await run({ query_path: '/A/ONE.TXT/' })).toEqual(ids('aOne'))
    expect(await run({ query_path: 'a/upper.txt' })).toEqual(ids('upper'))
    expect(await run({ query_path: 'a' })).toEqual(ids('folderA'))
    expect(await run({ query_path: 'a/one' })).toEqual([])
    expect(await run({ query_path: 'c/x' })).toEqual([])
  })

  it('matches query_folder and everything under it, never a sibling sharing its prefix', async () => {
    expect(await run({ query_folder: 'a' })).toEqual(ids('aOne', 'aSubTwo', 'upper', 'folderA'))
    expect(await run({ query_folder: '/A/' })).toEqual(ids('aOne', 'aSubTwo', 'upper', 'folderA'))
    expect(await run({ query_folder: 'a/sub' })).toEqual(ids('aSubTwo'))
    expect(await run({ query_folder: 'ab' })).toEqual(ids('abThree'))
    expect(await run({ query_folder: 'a/su' })).toEqual([])
    expect(await run({ query_folder: 'c' })).toEqual(ids('cNotFound', 'cRetried'))
  })

  it('matches query_request_method ignoring case', async () => {
    expect(await run({ query_request_method: 'get' })).toEqual(ids('bTimeout'))
    expect(await run({ query_request_method: 'POST' })).toEqual(ids(...ALL.filter((l) => l !== 'bTimeout')))
    expect(await run({ query_request_method: 'PUT' })).toEqual([])
  })

  it('matches query_request_url exactly', async () => {
    expect(await run({ query_request_url: U1 })).toEqual(
      ids('aOne', 'aSubTwo', 'upper', 'folderA', 'cNotFound', 'cRetried'),
    )
    expect(await run({ query_request_url: U2 })).toEqual(ids('abThree', 'bRefused'))
    expect(await run({ query_request_url: 'https://hooks.example.com/' })).toEqual([])
    expect(await run({ query_request_url: 'https://hooks.example.com/IN' })).toEqual([])
  })

  it('matches query_status on HTTP statuses and curl codes', async () => {
    expect(await run({ query_status: '500' })).toEqual(ids('abThree', 'cRetried'))
    expect(await run({ query_status: '7' })).toEqual(ids('bRefused'))
    expect(await run({ query_status: '28' })).toEqual(ids('bTimeout'))
    expect(await run({ query_status: '204' })).toEqual(ids('aSubTwo'))
    expect(await run({ query_status: '50' })).toEqual([])
  })

  it('matches query_success as a boolean (JSON text is not a boolean)', async () => {
    const ok = ids('aOne', 'aSubTwo', 'upper', 'folderA')
    const failed = ids('abThree', 'bRefused', 'bTimeout', 'aDotTxt', 'cNotFound', 'cRetried')
    expect(await run({ query_success: true })).toEqual(ok)
    expect(await run({ query_success: false })).toEqual(failed)
    expect(await run({ query_success: null })).toEqual(await run({}))
    for (const text of ['true', 'false']) {
      const r = await call(s, 'POST', '/action_notification_exports', {
        key: s.adminKey,
        body: { query_success: text },
      })
      expectError(r, 400, 'bad-request/request-params-invalid')
      expect(r.body.error).toContain('query_success')
    }
  })

  it('matches query_message as a substring, ignoring case', async () => {
    expect(await run({ query_message: 'internal server' })).toEqual(ids('abThree', 'cRetried'))
    expect(await run({ query_message: 'INTERNAL' })).toEqual(ids('abThree', 'cRetried'))
    expect(await run({ query_message: 'timed out' })).toEqual(ids('bTimeout'))
    expect(await run({ query_message: 'ok' })).toEqual(ids('aOne', 'upper', 'folderA'))
    expect(await run({ query_message: 'teapot' })).toEqual([])
  })

  it('combines fields with AND', async () => {
    expect(await run({ query_folder: 'b', query_success: false, query_status: '28' })).toEqual(
      ids('bTimeout'),
    )
    expect(await run({ query_folder: 'a', query_request_url: U1, end_at: iso(T0 + 3 * H) })).toEqual(
      ids('aOne', 'aSubTwo'),
    )
    expect(await run({ query_folder: 'c', query_message: 'internal' })).toEqual(ids('cRetried'))
    expect(await run({ query_path: 'a/one.txt', query_success: false })).toEqual([])
    expect(await run({ query_folder: 'b', query_request_method: 'post' })).toEqual(ids('bRefused'))
  })

  it('takes comma-separated values as OR within a field, ignoring empty ones', async () => {
    expect(await run({ query_status: '7,28' })).toEqual(ids('bRefused', 'bTimeout'))
    expect(await run({ query_status: '404,,500,' })).toEqual(
      ids('abThree', 'aDotTxt', 'cNotFound', 'cRetried'),
    )
    expect(await run({ query_folder: 'a/sub,b' })).toEqual(ids('aSubTwo', 'bRefused', 'bTimeout'))
    expect(await run({ query_path: 'a/one.txt,b/six.txt' })).toEqual(ids('aOne', 'bTimeout'))
    expect(await run({ query_request_method: 'post,get' })).toEqual(ids(...ALL))
    expect(await run({ query_request_url: `${U2},${U3}` })).toEqual(
      ids('abThree', 'bRefused', 'bTimeout', 'aDotTxt'),
    )
    expect(await run({ query_message: 'refused,not found' })).toEqual(ids('bRefused', 'aDotTxt', 'cNotFound'))
    expect(await run({ query_folder: 'b', query_status: '7,500' })).toEqual(ids('bRefused'))
    // A field with only empty values is as if absent.
    expect(await run({ query_status: ',' })).toEqual(ids(...ALL))
  })
})
