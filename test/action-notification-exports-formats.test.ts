import { stringify } from 'csv-stringify/sync'
import { beforeAll, describe, expect, it } from 'vitest'
import { call, dialects, useServer } from './helpers/server.js'
import { csvRowOf, parseCsv, pollExport, type SeededRecord, seedLog } from './helpers/webhook-log-fixtures.js'

/** Ways of sending and reading exports (query parameters, XML), and the tests' own CSV reader. */

describe('parseCsv (the tests’ RFC 4180 reader)', () => {
  it('reads back exactly what csv-stringify writes, quotes, commas and line breaks included', () => {
    const rows = [
      ['id', 'text', 'more'],
      ['1', 'plain', ''],
      ['2', 'a "quoted", text', 'line\r\nbreak'],
      ['3', '{"a":1,"b":"x"}', 'é ✓\n'],
      ['', ',', '"'],
    ]
    expect(parseCsv(stringify(rows))).toEqual(rows)
    // With CRLF between records csv-stringify quotes a field only for its own delimiter: a lone
    // LF goes out bare, which RFC 4180 does not allow (and other readers split the record at).
    expect(parseCsv(stringify(rows, { record_delimiter: 'windows', quoted_match: /[\r\n]/ }))).toEqual(rows)
    expect(() => parseCsv(stringify(rows, { record_delimiter: 'windows' }))).toThrow(/unquoted line break/)
    expect(parseCsv('a,b\r\n"x\ny",z\r\n')).toEqual([
      ['a', 'b'],
      ['x\ny', 'z'],
    ])
    expect(() => parseCsv('a,b"c\n')).toThrow()
    expect(() => parseCsv('"open\n')).toThrow()
    expect(() => parseCsv('"a"b,c\n')).toThrow()
  })

  it('writes each row as the JSON record, created_at in ISO 8601', () => {
    const row = csvRowOf({
      id: 5,
      created_at: 1_767_225_600,
      status: 200,
      message: 'OK',
      success: true,
      request_headers: '{}',
      request_method: 'POST',
      request_url: 'u',
      path: 'p',
      folder: '',
      attempt: 1,
      operation: 'Upload',
      response_size: 0,
      response_body: '',
      request_body: '{}',
      behavior_id: null,
    })
    expect(row).toEqual([
      '5',
      '2026-01-01T00:00:00Z',
      '200',
      'OK',
      'true',
      '{}',
      'POST',
      'u',
      'p',
      '',
      '1',
      'Upload',
      '0',
      '',
      '{}',
      '',
    ])
  })
})

describe.each(dialects)('webhook-log exports: query parameters and XML (%s)', (dialect) => {
  let refused: SeededRecord
  let sub: SeededRecord

  const s = useServer(dialect)
  beforeAll(async () => {
    ;[refused, sub] = (await seedLog(s, [
      { path: 'b/five.txt', status: 7, success: false, message: 'Connection refused' },
      { path: 'a/sub/two.txt', status: 204, success: true, message: 'No Content' },
      { path: 'b/six.txt', status: 28, success: false, message: 'Connect timed out after 5000 ms' },
      { path: 'a/sub/three.txt', status: 500, success: false, message: 'HTTP 500 Internal Server Error' },
    ])) as [SeededRecord, SeededRecord]
  })

  it('takes the query from query parameters and from an XML body', async () => {
    const q = new URLSearchParams({ query_folder: 'b', query_success: 'false', query_status: '7' })
    const byQuery = await call(s, 'POST', `/action_notification_exports?${q}`, { key: s.adminKey })
    expect(byQuery.status, byQuery.text).toBe(201)
    expect(byQuery.body).toMatchObject({ query_folder: 'b', query_success: false, query_status: '7' })
    const xml = await call(s, 'POST', '/action_notification_exports', {
      key: s.adminKey,
      raw: '<action-notification-export><query_folder>a/sub</query_folder><query_success>true</query_success></action-notification-export>',
      contentType: 'application/xml',
    })
    expect(xml.status, xml.text).toBe(201)
    expect(xml.body).toMatchObject({ query_folder: 'a/sub', query_success: true, status: 'building' })
    const who = { key: s.adminKey }
    for (const [made, expected] of [
      [byQuery, [refused.id]],
      [xml, [sub.id]],
    ] as const) {
      expect((await pollExport(s, made.body.id, who)).status).toBe('ready')
      const r = await call(
        s,
        'GET',
        `/action_notification_export_results?action_notification_export_id=${made.body.id}`,
        who,
      )
      expect(r.status, r.text).toBe(200)
      expect(r.body.map((x: any) => x.id)).toEqual(expected)
    }
  })

  it('answers in XML when asked', async () => {
    const r = await call(s, 'POST', '/action_notification_exports.xml', {
      key: s.adminKey,
      body: { query_folder: 'b' },
    })
    expect(r.status, r.text).toBe(201)
    expect(r.headers.get('content-type')).toMatch(/^application\/xml/)
    expect(r.text).toMatch(/<action-notification-export>/)
    expect(r.text).toMatch(/<query_folder>b<\/query_folder>/)
    const id = Number(/<id type="integer">(\d+)<\/id>/.exec(r.text)?.[1])
    expect((await pollExport(s, id, { key: s.adminKey })).status).toBe('ready')
    const list = await call(
      s,
      'GET',
      `/action_notification_export_results.xml?action_notification_export_id=${id}`,
      {
        key: s.adminKey,
      },
    )
    expect(list.status, list.text).toBe(200)
    expect(list.text).toMatch(/<action-notification-export-results type="array">/)
    expect(list.text.match(/<id type="integer">/g)).toHaveLength(2)
  })
})
