import { ERRORS } from '../../api/error-factories.js'

/**
 * Exact money: amounts are kept as integer minor units of their currency (cents, yen…) and only
 * turned into a JSON number (the spec's double) when rendered. The number of decimals comes from
 * the currency itself (ISO 4217 through Intl), so "12.345 USD" is refused rather than rounded.
 */

/** Largest amount accepted, in minor units: sums of many stay exact JavaScript integers. */
export const MAX_MINOR = 1_000_000_000_000_000

const KNOWN = new Set(Intl.supportedValuesOf('currency'))

/** The upper-case ISO 4217 code, or 400 for anything Intl does not know. */
export function parseCurrency(raw: string): string {
  const code = raw.trim().toUpperCase()
  if (!/^[A-Z]{3}$/.test(code) || !KNOWN.has(code)) {
    throw ERRORS.requestParamsInvalid(`Unknown currency "${raw}" (use an ISO 4217 code)`)
  }
  return code
}

const DIGITS = new Map<string, number>()

/**
 * Decimal places of a currency's minor unit (2 for USD, 0 for JPY, 3 for KWD). Remembered per
 * currency: every amount of every rendered record asks, and building an Intl.NumberFormat is slow.
 */
export function currencyDigits(currency: string): number {
  let digits = DIGITS.get(currency)
  if (digits === undefined) {
    digits =
      new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ??
      2
    DIGITS.set(currency, digits)
  }
  return digits
}

/** "12.30" → 1230 (USD). Positive only; more decimals than the currency has is an error. */
export function parseAmount(raw: string, currency: string, what = 'amount'): number {
  const digits = currencyDigits(currency)
  const m = /^(\d{1,16})(?:\.(\d+))?$/.exec(raw.trim())
  if (!m) throw ERRORS.requestParamsInvalid(`${what} must be a decimal number like 12.50`)
  const frac = (m[2] ?? '').replace(/0+$/, '')
  if (frac.length > digits) {
    throw ERRORS.requestParamsInvalid(`${what} has more decimals than ${currency} allows (${digits})`)
  }
  const minor = Number(m[1]) * 10 ** digits + Number(frac.padEnd(digits, '0') || '0')
  if (minor <= 0 || minor > MAX_MINOR) {
    throw ERRORS.requestParamsInvalid(
      `${what} must be greater than 0 and at most ${toDecimal(MAX_MINOR, currency)}`,
    )
  }
  return minor
}

/** 1230 → "12.30" (USD): the exact decimal text, for documents and messages. */
export function toDecimal(minor: number, currency: string): string {
  const digits = currencyDigits(currency)
  const sign = minor < 0 ? '-' : ''
  const abs = String(Math.abs(minor)).padStart(digits + 1, '0')
  return digits === 0 ? `${sign}${abs}` : `${sign}${abs.slice(0, -digits)}.${abs.slice(-digits)}`
}

/** 1230 → 12.3: the double nearest to the exact decimal, as the API renders amounts. */
export function toNumber(minor: number, currency: string): number {
  return Number(toDecimal(minor, currency))
}
