import crypto from 'node:crypto'
import { createRequire } from 'node:module'
import type { TOTP } from 'otpauth'

/** otpauth, loaded with the first two-factor code or secret: most requests never need it. */
let otpauth: typeof import('otpauth') | undefined
const lib = () => {
  otpauth ??= createRequire(import.meta.url)('otpauth') as typeof import('otpauth')
  return otpauth
}

/** RFC 6238 as every authenticator app reads it by default: SHA-1, 6 digits, 30-second steps. */
const PERIOD = 30
const DIGITS = 6
/** Codes of the step before and after the current one pass too (clocks drift, people type slowly). */
const WINDOW = 1

function totp(secret: string, issuer: string, label: string): TOTP {
  const { TOTP, Secret } = lib()
  return new TOTP({
    issuer,
    label,
    algorithm: 'SHA1',
    digits: DIGITS,
    period: PERIOD,
    secret: Secret.fromBase32(secret),
  })
}

/** A new random secret (160 bits, as RFC 4226 recommends), in base32. */
export function newTotpSecret(): string {
  return new (lib().Secret)({ size: 20 }).base32
}

/** The `otpauth://totp/...` URI an authenticator app reads (from a QR code, usually). */
export function otpauthUri(secret: string, issuer: string, label: string): string {
  return totp(secret, issuer, label).toString()
}

/**
 * The 30-second step whose code `token` is, within one step either side of `now`, or null when
 * it is no code of this secret. The step lets a caller refuse a code already used.
 */
export function totpStep(secret: string, token: string, now: number): number | null {
  if (!/^\d{6}$/.test(token)) return null
  const t = totp(secret, 'Wharf', 'user')
  const delta = t.validate({ token, timestamp: now, window: WINDOW })
  return delta === null ? null : t.counter({ timestamp: now }) + delta
}

/** Whether `otp` looks like a TOTP code (six digits) rather than a recovery code. */
export function isTotpCode(otp: string): boolean {
  return /^\d{6}$/.test(otp.trim())
}

const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789'

/** A recovery code: 16 characters from an unambiguous alphabet in groups of four (about 79 bits). */
export function newRecoveryCode(): string {
  const chars = Array.from(
    { length: 16 },
    () => RECOVERY_ALPHABET[crypto.randomInt(RECOVERY_ALPHABET.length)],
  )
  return [0, 4, 8, 12].map((i) => chars.slice(i, i + 4).join('')).join('-')
}

/** A recovery code as typed (any case, with or without its dashes and spaces) in its stored form. */
export function normalizeRecoveryCode(code: string): string {
  return code.toLowerCase().replace(/[\s-]/g, '')
}

/**
 * Secrets are stored encrypted (AES-256-GCM) under a key derived from the site's signing secret:
 * a copy of the table alone (a backup, an export of rows) gives no authenticator away.
 */
function keyOf(signingSecret: string): Buffer {
  return Buffer.from(crypto.hkdfSync('sha256', signingSecret, '', 'wharf two-factor secret', 32))
}

export function encryptSecret(secret: string, signingSecret: string): string {
  const iv = crypto.randomBytes(12)
  const cipher = crypto.createCipheriv('aes-256-gcm', keyOf(signingSecret), iv)
  const data = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()])
  return [
    'v1',
    iv.toString('base64url'),
    cipher.getAuthTag().toString('base64url'),
    data.toString('base64url'),
  ].join('$')
}

export function decryptSecret(stored: string, signingSecret: string): string {
  const [version, iv, tag, data] = stored.split('$')
  if (version !== 'v1' || !iv || !tag || data === undefined)
    throw new Error('Unknown two-factor secret format')
  const decipher = crypto.createDecipheriv('aes-256-gcm', keyOf(signingSecret), Buffer.from(iv, 'base64url'))
  decipher.setAuthTag(Buffer.from(tag, 'base64url'))
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8')
}
