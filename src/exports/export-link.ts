import { invalidLink, parseExpiry } from '../modules/files/signed-link.js'
import { hmac, safeEqual } from '../security/secrets.js'

/**
 * `results_url` of a ready export: a signed, expiring link to its CSV, usable without
 * credentials (refused like every signed link: 401 invalid-or-expired-code).
 */

/** How long a `results_url` works from the response that handed it out. */
export const RESULTS_URL_SECONDS = 24 * 3600

const signature = (secret: string, siteId: number, id: number, expires: number) =>
  hmac(secret, `export-results:${siteId}:${id}:${expires}`)

export function exportResultsUrl(baseUrl: string, secret: string, siteId: number, id: number, nowMs: number) {
  const expires = Math.floor(nowMs / 1000) + RESULTS_URL_SECONDS
  const sig = signature(secret, siteId, id, expires)
  return `${baseUrl}/api/rest/v1/export_files/${id}?expires=${expires}&signature=${sig}`
}

/** Throws 401 unless the link is unexpired and signed for this export of this site. */
export function checkExportResultsLink(
  secret: string,
  siteId: number,
  id: number,
  query: { expires?: string | undefined; signature?: string | undefined },
  nowMs: number,
): void {
  const expires = parseExpiry(query.expires, nowMs)
  if (!safeEqual(query.signature ?? '', signature(secret, siteId, id, expires))) throw invalidLink()
}
