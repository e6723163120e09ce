import { describe, expect, it } from 'vitest'
import { formatDateTime, parseDateTime } from '../src/api/datetime.js'

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
      '0050-01-01',
      '1700000000',
      'tomorrow',
    ]) {
      expect(() => parseDateTime(bad, 'expires_at'), bad).toThrow(
        expect.objectContaining({ type: 'bad-request/datetime-parse', status: 400 }),
      )
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
