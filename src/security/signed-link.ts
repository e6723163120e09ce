import { ERRORS } from '../api/error-factories.js'
import { hmac, safeEqual } from './secrets.js'

/**
 * The two kinds of unauthenticated transfer URL: part uploads (`upload_uri`) and downloads
 * (`download_uri`). Both are signed with the site's secret and expire; whoever holds one may use
 * it until then, exactly like a Files.com link.
 */

/**
 * How long a file-aware webhook notification's download link works (made afresh at each attempt;
 * the blob janitor keeps the bytes it names at least that long after the last one).
 */
export const FILE_LINK_MS = 15 * 60_000

/** The one refusal of every signed link, whatever is wrong with it: nothing to probe. */
export const invalidLink = () => ERRORS.invalidOrExpiredCode('This link is invalid or has expired')

export function uploadPartSignature(
  secret: string,
  siteId: number,
  ref: string,
  part: number,
  expires: number,
): string {
  return hmac(secret, `upload-part:${siteId}:${ref}:${part}:${expires}`)
}

export function uploadPartUrl(
  baseUrl: string,
  secret: string,
  siteId: number,
  ref: string,
  part: number,
  expires: number,
): string {
  const signature = uploadPartSignature(secret, siteId, ref, part, expires)
  return `${baseUrl}/api/rest/v1/upload_parts/${ref}/${part}?expires=${expires}&signature=${signature}`
}

/** Throws 401 invalid-or-expired-code unless the part URL's signature is right and unexpired. */
export function checkUploadPartSignature(
  secret: string,
  siteId: number,
  ref: string,
  part: number,
  expires: number,
  signature: string,
): void {
  if (!safeEqual(signature, uploadPartSignature(secret, siteId, ref, part, expires))) throw invalidLink()
}

/** `expires` of a signed URL: epoch seconds, refused once passed (401). */
export function parseExpiry(raw: unknown, nowMs: number): number {
  const expires = typeof raw === 'string' && /^\d{1,12}$/.test(raw) ? Number(raw) : Number.NaN
  if (!Number.isFinite(expires) || expires * 1000 <= nowMs) throw invalidLink()
  return expires
}

/** The query of a signed record link, as its route receives it. */
export interface LinkQuery {
  expires?: string | undefined
  signature?: string | undefined
}

/**
 * A signed, expiring link to one record of a site, usable without credentials:
 * `BASE_URL/api/rest/v1/<route>/<id>?expires=…&signature=…`. `purpose` goes into the signature,
 * so a link made for one kind of record never opens another kind with the same id.
 */
export function recordLink(purpose: string, route: string) {
  const signature = (secret: string, siteId: number, id: number, expires: number) =>
    hmac(secret, `${purpose}:${siteId}:${id}:${expires}`)
  return {
    url(baseUrl: string, secret: string, siteId: number, id: number, expires: number): string {
      const sig = signature(secret, siteId, id, expires)
      return `${baseUrl}/api/rest/v1/${route}/${id}?expires=${expires}&signature=${sig}`
    },
    /** Throws 401 unless the link is unexpired and signed for this record of this site. */
    check(secret: string, siteId: number, id: number, query: LinkQuery, nowMs: number): void {
      const expires = parseExpiry(query.expires, nowMs)
      if (!safeEqual(query.signature ?? '', signature(secret, siteId, id, expires))) throw invalidLink()
    },
  }
}

/** What a download link carries: which bytes, for whom (history), until when. */
export interface DownloadClaims {
  /** site id */
  s: number
  /** file id */
  f: number
  /** blob key: a link to a file that has since been replaced no longer works */
  b: string
  /** user id of the caller who asked for the link (null: site-wide key) */
  u: number | null
  /** API key id, if any */
  k: number | null
  /** interface the link was asked for through */
  i: string
  /** expiry, epoch seconds */
  e: number
  /**
   * A file-aware webhook's link: the notification whose file version `b` is (the link serves
   * those bytes even after a newer version replaced them).
   */
  w?: number
}

/** `<base64url JSON>~<base64url HMAC>`: no dots, so no path or format-suffix rule touches it. */
export function signDownloadToken(secret: string, claims: DownloadClaims): string {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url')
  return `${payload}~${hmac(secret, `download:${payload}`)}`
}

/**
 * Reads a download token's claims without trusting them yet: the site id inside names the
 * secret to check the signature with (`verifyDownloadToken`).
 */
export function readDownloadToken(token: string): { claims: DownloadClaims; payload: string; sig: string } {
  const sep = token.lastIndexOf('~')
  if (sep <= 0 || token.length > 2048) throw invalidLink()
  const payload = token.slice(0, sep)
  const sig = token.slice(sep + 1)
  let claims: unknown
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
  } catch {
    throw invalidLink()
  }
  if (!isClaims(claims)) throw invalidLink()
  return { claims, payload, sig }
}

export function verifyDownloadToken(
  secret: string,
  t: { claims: DownloadClaims; payload: string; sig: string },
  nowMs: number,
): void {
  if (!safeEqual(t.sig, hmac(secret, `download:${t.payload}`))) throw invalidLink()
  if (t.claims.e * 1000 <= nowMs) throw invalidLink()
}

function isClaims(v: unknown): v is DownloadClaims {
  if (typeof v !== 'object' || v === null) return false
  const c = v as Record<string, unknown>
  const id = (x: unknown) => Number.isSafeInteger(x) && (x as number) > 0
  const optId = (x: unknown) => x === null || id(x)
  return (
    id(c['s']) &&
    id(c['f']) &&
    typeof c['b'] === 'string' &&
    optId(c['u']) &&
    optId(c['k']) &&
    typeof c['i'] === 'string' &&
    Number.isSafeInteger(c['e']) &&
    (c['w'] === undefined || id(c['w']))
  )
}
