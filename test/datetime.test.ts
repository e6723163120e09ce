import { describe, expect, it } from 'vitest'
import { formatDateTime, parseDateTime } from '../src/api/datetime.js'
import { call, dialects, expectError, makeUser, useServer } from './helpers/server.js'

const utc = (iso: string) => Date.parse(iso)

describe('parseDateTime', () => {
  it('reads a date alone as 00:00:00 UTC', () => {
    expect(parseDateTime('2026-03-04', 'f')).toBe(utc('2026-03-04T00:00:00Z'))
    expect(parseDateTime('2024-02-29', 'f')).toBe(utc('2024-02-29T00:00:00Z'))
  })

  it('reads date-times in UTC with Z, or without an offset', () => {
    expect(parseDateTime('2026-03-04T05:06:07Z', 'f')).toBe(utc('2026-03-04T05:06:07Z'))
    expect(parseDateTime('2026-03-04T05:06:07z', 'f')).toBe(utc('2026-03-04T05:06:07Z'))
    expect(parseDateTime('2026-03-04T05:06:07', 'f')).toBe(utc('2026-03-04T05:06:07Z'))
    expect(parseDateTime('2026-03-04 05:06:07Z', 'f')).toBe(utc('2026-03-04T05:06:07Z'))
    expect(parseDateTime('2026-03-04T05:06Z', 'f')).toBe(utc('2026-03-04T05:06:00Z'))
  })

  it('applies offsets, with or without a colon', () => {
    expect(parseDateTime('2026-03-04T05:06:07+02:00', 'f')).toBe(utc('2026-03-04T03:06:07Z'))
    expect(parseDateTime('2026-03-04T05:06:07-0530', 'f')).toBe(utc('2026-03-04T10:36:07Z'))
    expect(parseDateTime('2026-03-04T05:06:07+01', 'f')).toBe(utc('2026-03-04T04:06:07Z'))
    expect(parseDateTime('2026-01-01T01:00:00+02:00', 'f')).toBe(utc('2025-12-31T23:00:00Z'))
    expect(parseDateTime('2026-03-04T05:06:07+00:00', 'f')).toBe(utc('2026-03-04T05:06:07Z'))
  })

  it('keeps fractional seconds to the millisecond', () => {
    expect(parseDateTime('2026-03-04T05:06:07.5Z', 'f')).toBe(utc('2026-03-04T05:06:07.500Z'))
    expect(parseDateTime('2026-03-04T05:06:07.123456789Z', 'f')).toBe(utc('2026-03-04T05:06:07.123Z'))
    expect(parseDateTime('2026-03-04T05:06:07,25+01:00', 'f')).toBe(utc('2026-03-04T04:06:07.250Z'))
  })

  it('refuses junk and impossible dates or times with bad-request/datetime-parse', () => {
    for (const bad of [
      'junk',
      '',
      '   ',
      '2026-02-30',
      '2025-02-29',
      '2026-13-01',
      '2026-00-10',
      '2026-01-01T25:00',
      '2026-01-01T24:00:00Z',
      '2026-01-01T23:60:00Z',
      '2026-01-01T23:59:60Z',
      '2026-01-01T10:00:00+25:00',
      '2026-01-01T10:00:00+02:60',
      '2026-1-1',
      '20260101',
      '2026-01-01T',
      '2026-01-01T10',
      '2026-01-01T10:00:00Zjunk',
      '0050-02-29',
      // An offset carrying the time out of the years 0000 to 9999.
      '0000-01-01T00:30:00+01:00',
      '9999-12-31T23:30:00-01:00',
      '10000-01-01',
      '-0001-01-01',
      '1700000000',
      'tomorrow',
    ]) {
      expect(() => parseDateTime(bad, 'expires_at'), bad).toThrow(
        expect.objectContaining({ type: 'bad-request/datetime-parse', status: 400 }),
      )
    }
  })

  it('reads the years 0000 to 0099 as themselves, not as 1900 to 1999', () => {
    const year = (y: number, ms: number) => {
      const d = new Date(0)
      d.setUTCFullYear(y, 0, 1)
      d.setUTCHours(0, 0, 0, 0)
      return d.getTime() + ms
    }
    expect(parseDateTime('0000-01-01', 'f')).toBe(year(0, 0))
    expect(parseDateTime('0050-01-01T00:00:01Z', 'f')).toBe(year(50, 1000))
    expect(parseDateTime('0099-01-01T01:00:00+01:00', 'f')).toBe(year(99, 0))
    expect(parseDateTime('0004-02-29', 'f')).toBe(year(4, 59 * 86_400_000))
    expect(parseDateTime('9999-12-31T23:59:59Z', 'f')).toBe(utc('9999-12-31T23:59:59Z'))
    for (const s of ['0000-01-01T00:00:00Z', '0001-02-03T04:05:06Z', '0099-12-31T23:59:59Z']) {
      expect(formatDateTime(parseDateTime(s, 'f'))).toBe(s)
    }
  })

  it('refuses values that are not strings', () => {
    for (const bad of [1700000000000, null, undefined, {}, true]) {
      expect(() => parseDateTime(bad, 'f')).toThrow(
        expect.objectContaining({ type: 'bad-request/datetime-parse' }),
      )
    }
  })

  it('names the field and the value in its message', () => {
    expect(() => parseDateTime('2026-02-30', 'expires_at')).toThrow(/expires_at.*2026-02-30/)
  })
})

describe('formatDateTime', () => {
  it('writes ISO 8601 UTC with seconds precision and a trailing Z', () => {
    expect(formatDateTime(utc('2026-03-04T05:06:07Z'))).toBe('2026-03-04T05:06:07Z')
    expect(formatDateTime(utc('2026-03-04T05:06:07.999Z'))).toBe('2026-03-04T05:06:07Z')
    expect(formatDateTime(0)).toBe('1970-01-01T00:00:00Z')
    expect(formatDateTime(-1)).toBe('1969-12-31T23:59:59Z')
  })

  it('keeps null and undefined as null', () => {
    expect(formatDateTime(null)).toBeNull()
    expect(formatDateTime(undefined)).toBeNull()
  })

  it('round-trips with parseDateTime at second precision', () => {
    for (const s of ['2026-03-04T05:06:07Z', '1999-12-31T23:59:59Z', '2040-02-29T12:00:00Z']) {
      expect(formatDateTime(parseDateTime(s, 'f'))).toBe(s)
    }
    expect(formatDateTime(parseDateTime('2026-03-04T05:06:07.9+02:00', 'f'))).toBe('2026-03-04T03:06:07Z')
  })
})

describe.each(dialects)('date-time parameters over HTTP (%s)', (dialect) => {
  const s = useServer(dialect)
  const PARSE = 'bad-request/datetime-parse'

  it('refuses an empty date-time where the document does not say blank means none', async () => {
    const key = s.adminKey
    const folder = await call(s, 'POST', '/folders/empty-mtime', { key, body: { provided_mtime: '' } })
    expectError(folder, 400, PARSE)
    expect((await call(s, 'GET', '/folders/empty-mtime', { key })).status).toBe(404)
    expectError(await call(s, 'POST', '/folders/empty-mtime?provided_mtime=', { key }), 400, PARSE)
    const xml = await call(s, 'POST', '/folders/empty-mtime', {
      key,
      raw: '<folder><provided_mtime></provided_mtime></folder>',
      contentType: 'application/xml',
    })
    expectError(xml, 400, PARSE)
    expectError(await call(s, 'GET', '/folders/?type=file&modified_at_datetime=', { key }), 400, PARSE)
    expectError(await call(s, 'POST', '/history_exports', { key, body: { start_at: '' } }), 400, PARSE)
    expectError(
      await call(s, 'POST', '/action_notification_exports', { key, body: { end_at: '' } }),
      400,
      PARSE,
    )
    expectError(await call(s, 'GET', '/api_keys?filter_gt[expires_at]=', { key }), 400, PARSE)
    // Null stays "none" where the field is nullable.
    const none = await call(s, 'POST', '/history_exports', { key, body: { start_at: null } })
    expect(none.status).toBe(201)
  })

  it('takes blank as none where the document says so: history ranges and key expiry', async () => {
    const key = s.adminKey
    const history = await call(s, 'GET', '/history?start_at=&end_at=', { key })
    expect(history.status).toBe(200)
    const user = await makeUser(s)
    const created = await call(s, 'POST', '/api_keys', { key, body: { user_id: user.id, expires_at: '' } })
    expect(created.status, created.text).toBe(201)
    expect(created.body.expires_at).toBeNull()
    const doc = (await call(s, 'GET', '/swagger_doc')).body
    const param = (path: string, name: string) =>
      doc.paths[path].get.parameters.find((p: { name: string }) => p.name === name)
    expect(param('/history', 'start_at').minLength).toBeUndefined()
    expect(param('/history', 'start_at').description).toMatch(/blank for no limit/)
    expect(param('/folders/{path}', 'modified_at_datetime').minLength).toBe(1)
    const body = doc.paths['/history_exports'].post.parameters.find((p: { in: string }) => p.in === 'body')
    expect(body.schema.properties.start_at.minLength).toBe(1)
  })

  it('takes the years 0000 to 0099 and shows them as given', async () => {
    const key = s.adminKey
    const r = await call(s, 'POST', '/folders/old-times', {
      key,
      body: { provided_mtime: '0050-06-01T12:00:00Z' },
    })
    expect(r.status, r.text).toBe(201)
    expect(r.body.provided_mtime).toBe('0050-06-01T12:00:00Z')
    expect((await call(s, 'GET', '/history?start_at=0001-01-01&end_at=0099-12-31', { key })).status).toBe(200)
    expectError(
      await call(s, 'POST', '/folders/older', { key, body: { provided_mtime: '0000-01-01T00:00:00+01:00' } }),
      400,
      PARSE,
    )
  })
})
