import type { Credentials } from '../modules/auth/auth-service.js'

type Headers = Record<string, string | string[] | undefined>

const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)

/** Credentials from X-ServiceAPI-Key, HTTP Basic (key as user name), X-ServiceAPI-Auth, or the Files.com aliases. */
export function credentialsFrom(headers: Headers): Credentials {
  let apiKey = first(headers['x-serviceapi-key']) ?? first(headers['x-filesapi-key'])
  const auth = first(headers['authorization'])
  if (!apiKey && auth && /^basic /i.test(auth)) {
    const decoded = Buffer.from(auth.slice(6).trim(), 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    apiKey = colon === -1 ? decoded : decoded.slice(0, colon)
  }
  const sessionId = first(headers['x-serviceapi-auth']) ?? first(headers['x-filesapi-auth'])
  return { apiKey: apiKey?.trim() || undefined, sessionId: sessionId?.trim() || undefined }
}
