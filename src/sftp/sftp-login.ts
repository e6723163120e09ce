import type { Logger } from 'pino'
import ssh2, { type AuthContext } from 'ssh2'
import { isLoginRefusal, type ProtocolSession } from '../modules/auth/protocol-login.js'
import type { FrontEndContext } from '../modules/services.js'
import { describeBlob } from '../modules/ssh/ssh-keys.js'

/** Failed password or key tries one connection gets before it is closed. */
export const MAX_AUTH_TRIES = 6

/**
 * Answers one SSH authentication request: a password (or an API key of that user) with the rules
 * of POST /sessions, or a public key registered through /public_keys. Resolves to the session
 * when the credentials are good (the caller accepts, once its own limits allow), null when the
 * request was refused or answered (a client asking whether a key would do).
 */
export async function authenticate(
  c: FrontEndContext,
  ctx: AuthContext,
  ip: string,
  logger: Logger,
): Promise<ProtocolSession | null> {
  const siteId = c.site.id
  try {
    if (ctx.method === 'password') {
      const session = await c.services.protocolLogin.password(siteId, {
        username: ctx.username,
        password: ctx.password,
        ip,
        interface: 'sftp',
      })
      return session
    }
    if (ctx.method === 'publickey') {
      const described = describeBlob(ctx.key.data)
      const fingerprint = described.fingerprintSha256
      const signed = ctx.signature !== undefined && ctx.blob !== undefined
      const user = await c.services.publicKeys.userForKey(siteId, ctx.username, fingerprint, signed)
      if (!user) {
        // Clients offer every key they have: an unknown one is not a failed login.
        ctx.reject(['password', 'publickey'])
        return null
      }
      if (!signed) {
        ctx.accept()
        return null
      }
      const key = ssh2.utils.parseKey(described.openssh)
      const parsed = Array.isArray(key) ? key[0] : key
      if (!parsed || parsed instanceof Error || !parsed.verify(ctx.blob!, ctx.signature!, ctx.hashAlgo)) {
        ctx.reject(['password', 'publickey'])
        return null
      }
      return await c.services.protocolLogin.trusted(user, ip, 'sftp', 'with an SSH key')
    }
    ctx.reject(['password', 'publickey'])
    return null
  } catch (err) {
    if (isLoginRefusal(err)) logger.info({ username: ctx.username, type: err.type }, 'SFTP login refused')
    else logger.error({ err }, 'SFTP login failed')
    ctx.reject(['password', 'publickey'])
    return null
  }
}
