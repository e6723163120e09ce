import { TOTP, URI } from 'otpauth'

/** The authenticator behind an `otpauth://` URI, as a phone app would read it from the QR code. */
export function authenticator(uri: string): TOTP {
  const parsed = URI.parse(uri)
  if (!(parsed instanceof TOTP)) throw new Error(`not a TOTP URI: ${uri}`)
  return parsed
}

/** The code the authenticator shows at `at` (ms). */
export const codeAt = (uri: string, at: number): string => authenticator(uri).generate({ timestamp: at })
