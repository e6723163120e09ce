import crypto from 'node:crypto'
import { promisify } from 'node:util'

const scrypt = promisify(crypto.scrypt) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: crypto.ScryptOptions,
) => Promise<Buffer>

// OWASP's scrypt floor (N=2^17, r=8, p=1) costs ~128 MiB per hash; 2^15 keeps a login at ~35 ms and
// 32 MiB on a 2-core machine while staying far beyond brute force for a salted hash.
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 }

/** `scrypt$N$r$p$salt$hash` (base64url parts). */
export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.randomBytes(16)
  const hash = await scrypt(password.normalize('NFC'), salt, 32, SCRYPT)
  return [
    'scrypt',
    SCRYPT.N,
    SCRYPT.r,
    SCRYPT.p,
    salt.toString('base64url'),
    hash.toString('base64url'),
  ].join('$')
}

export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  if (!stored) {
    // Spend the same time as a real check, so a missing user is not told apart by timing.
    await hashPassword(password)
    return false
  }
  const [scheme, n, r, p, salt, hash] = stored.split('$')
  if (scheme !== 'scrypt' || !salt || !hash) return false
  const expected = Buffer.from(hash, 'base64url')
  const actual = await scrypt(password.normalize('NFC'), Buffer.from(salt, 'base64url'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem,
  })
  return crypto.timingSafeEqual(actual, expected)
}

/** API keys and session ids carry 256 random bits, so a fast hash is enough to store them safely. */
export function tokenHash(token: string): string {
  // The one-shot form skips creating a Hash object: this runs on every authenticated request.
  return oneShotHash
    ? oneShotHash('sha256', token, 'hex')
    : crypto.createHash('sha256').update(token).digest('hex')
}

const oneShotHash = (crypto as { hash?: (alg: string, data: string, enc: 'hex') => string }).hash

export function randomHex(bytes: number): string {
  return crypto.randomBytes(bytes).toString('hex')
}

export function hmac(secret: string, data: string): string {
  return crypto.createHmac('sha256', secret).update(data).digest('base64url')
}

export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a)
  const bb = Buffer.from(b)
  return ab.length === bb.length && crypto.timingSafeEqual(ab, bb)
}

/** A generated password for the bootstrap admin: 24 characters from an unambiguous alphabet. */
export function generatePassword(): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789'
  // randomInt draws each character uniformly; a byte modulo 57 would favour the first 28.
  return Array.from({ length: 24 }, () => alphabet[crypto.randomInt(alphabet.length)]).join('')
}
