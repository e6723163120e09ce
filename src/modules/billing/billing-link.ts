import { hmac, safeEqual } from '../../security/secrets.js'
import { invalidLink, parseExpiry } from '../files/signed-link.js'

/**
 * `download_uri` of an invoice or payment: a signed, expiring link to its PDF, usable without
 * credentials like a file's download link (and refused the same way: 401 invalid-or-expired-code).
 */

const signature = (secret: string, siteId: number, id: number, expires: number) =>
  hmac(secret, `billing-document:${siteId}:${id}:${expires}`)

export function billingDocumentUrl(
  baseUrl: string,
  secret: string,
  siteId: number,
  id: number,
  expires: number,
): string {
  const sig = signature(secret, siteId, id, expires)
  return `${baseUrl}/api/rest/v1/billing_documents/${id}?expires=${expires}&signature=${sig}`
}

/** Throws 401 unless the link is unexpired and signed for this record of this site. */
export function checkBillingDocumentLink(
  secret: string,
  siteId: number,
  id: number,
  query: { expires?: string | undefined; signature?: string | undefined },
  nowMs: number,
): void {
  const expires = parseExpiry(query.expires, nowMs)
  if (!safeEqual(query.signature ?? '', signature(secret, siteId, id, expires))) throw invalidLink()
}
