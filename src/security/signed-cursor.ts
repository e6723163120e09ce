import { ERRORS } from '../api/error-factories.js'
import { hmac, safeEqual } from './secrets.js'

/**
 * Cursors of every list (the API's pages, an export's results): the base64url of a JSON payload,
 * then its HMAC under the site's signing secret. The purpose is part of what is signed, so a
 * cursor made for one kind of list is never taken by another; a client can read a cursor but
 * never forge or alter one.
 */
export function signCursor(purpose: string, payload: unknown, secret: string): string {
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url')
  return `${body}.${hmac(secret, `${purpose}:${body}`)}`
}

/** The payload of a cursor signed for `purpose`; anything else is 400 invalid-cursor. */
export function openCursor(purpose: string, raw: string, secret: string): unknown {
  const [body, sig, extra] = raw.split('.')
  if (!body || !sig || extra !== undefined || !safeEqual(sig, hmac(secret, `${purpose}:${body}`))) {
    throw ERRORS.invalidCursor('The cursor is not valid')
  }
  try {
    return JSON.parse(Buffer.from(body, 'base64url').toString('utf8'))
  } catch {
    throw ERRORS.invalidCursor('The cursor is not valid')
  }
}
