import { ERRORS } from './error-factories.js'

// Records are rendered over and over with the same few times (a key's created_at on every request).
const formatted = new Map<number, string>()

/** ISO 8601 UTC with seconds precision and a trailing Z (decisions.md, "Formats"). */
export function formatDateTime(ms: number | null | undefined): string | null {
  if (ms === null || ms === undefined) return null
  const seconds = Math.floor(ms / 1000)
  let s = formatted.get(seconds)
  if (s === undefined) {
    s = new Date(seconds * 1000).toISOString().replace('.000Z', 'Z')
    if (formatted.size >= 10_000) formatted.clear()
    formatted.set(seconds, s)
  }
  return s
}

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/

const FIRST_MS = utc(0, 0, 1)
const LAST_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999)

/** Date.UTC, but a year from 0 to 99 is that year, not 1900 to 1999. */
function utc(year: number, month: number, day: number, h = 0, m = 0, s = 0): number {
  const d = new Date(Date.UTC(year, month, day, h, m, s))
  if (year < 100) d.setUTCFullYear(year, month, day)
  return d.getTime()
}

/**
 * Any ISO 8601 date or date-time from year 0000 to 9999; a date alone means 00:00:00 UTC, a
 * date-time without an offset is UTC. Anything else (the empty string too) is 400
 * bad-request/datetime-parse.
 */
export function parseDateTime(value: unknown, field: string): number {
  const s = typeof value === 'string' ? value.trim() : ''
  let ms = Number.NaN
  const d = DATE_ONLY.exec(s)
  if (d) {
    ms = utc(Number(d[1]), Number(d[2]) - 1, Number(d[3]))
    if (!sameDate(ms, d)) ms = Number.NaN
  } else {
    const m = DATE_TIME.exec(s)
    if (m) {
      const frac = m[7] ? Number(`0.${m[7]}`) * 1000 : 0
      ms = utc(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6] ?? 0))
      if (!sameDate(ms, m) || Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6] ?? 0) > 59)
        ms = Number.NaN
      ms += Math.floor(frac)
      const off = m[8]
      if (off && off.toUpperCase() !== 'Z') {
        const sign = off[0] === '-' ? -1 : 1
        const digits = off.slice(1).replace(':', '')
        const hours = Number(digits.slice(0, 2))
        const mins = Number(digits.slice(2) || 0)
        // An offset such as +25:00 names no place on Earth: refuse it rather than shift the time.
        if (hours > 23 || mins > 59) ms = Number.NaN
        ms -= sign * (hours * 60 + mins) * 60_000
      }
    }
  }
  // An offset can carry the first or last day out of the four-digit years, which Wharf cannot show.
  if (!Number.isFinite(ms) || ms < FIRST_MS || ms > LAST_MS) {
    throw ERRORS.datetimeParse(`${field} is not a valid ISO 8601 date or date-time: "${String(value)}"`)
  }
  return ms
}

function sameDate(ms: number, m: RegExpExecArray): boolean {
  const dt = new Date(ms)
  return (
    dt.getUTCFullYear() === Number(m[1]) &&
    dt.getUTCMonth() + 1 === Number(m[2]) &&
    dt.getUTCDate() === Number(m[3])
  )
}

/**
 * The `date-time` format of request schemas: what parseDateTime takes, and '' (which a field
 * either takes as "none" or refuses with `minLength: 1`, see DateTimeText). The Swagger document says `format: date-time`; a
 * value refused for its format answers 400 bad-request/datetime-parse, as the parser does.
 */
export function isDateTimeText(s: string): boolean {
  if (s === '') return true
  try {
    parseDateTime(s, '')
    return true
  } catch {
    return false
  }
}

export const DATE_TIME_FORMS =
  'Any ISO 8601 date or date-time (a date alone means 00:00:00 UTC; no offset means UTC)'
