import type { Logger } from 'pino'
import ssh2, { type AuthContext } from 'ssh2'
import { isLoginRefusal, type ProtocolSession } from '../modules/auth/protocol-login.js'
import { bannedMessage } from '../modules/login-defender/login-defender.js'
import type { FrontEndContext } from '../modules/services.js'
import { describeBlob } from '../modules/ssh/ssh-keys.js'
import { isCodeRequired } from '../modules/two-factor/two-factor-service.js'

/** Failed password or key tries one connection gets before it is closed. */
export const MAX_AUTH_TRIES = 6

/** What the tries of one connection tell the login defender. */
export interface SftpAuthState {
  /** Seconds left of the address's ban when the connection came (0: none), read once. */
  readonly bannedFor: Promise<number>
  /**
   * A password try has failed since that read, so later tries read the ban again (a refused key
   * is scored only when the connection ends without a login, so it changes no ban meanwhile).
   */
  failed: boolean
  /** A key was refused (unknown user or key, bad signature). */
  keyRefused: boolean
  /** The user name the last refused key was offered for. */
  keyUsername: string
  passwordTried: boolean
  /**
   * A right password of a user with two-factor sign-in: keyboard-interactive asks for the code
   * next (the login is then made with both).
   */
  awaitingCode?: { username: string; password: string } | undefined
}

/** A connection's state, its ban read at once (an unreadable ban is no ban: logins decide). */
export function sftpAuthState(c: FrontEndContext, ip: string): SftpAuthState {
  return {
    bannedFor: c.services.loginDefender.banSecondsLeft(c.site.id, ip).catch(() => 0),
    failed: false,
    keyRefused: false,
    keyUsername: '',
    passwordTried: false,
  }
}

/**
 * A banned address is told why before its first try: the SSH service that carries logins is
 * accepted only once the ban has been read, with a banner (which OpenSSH prints) when there is
 * one. ssh2 sends a banner only from its configuration, at that moment, so the connection's own
 * protocol object is asked to wait; without it (another ssh2) the refusal is silent.
 */
export function announceBan(client: ssh2.Connection, bannedFor: Promise<number>): void {
  const proto = (
    client as unknown as { _protocol?: { serviceAccept?: (svc: string) => void; _banner?: string } }
  )._protocol
  const serviceAccept = proto?.serviceAccept
  if (!proto || typeof serviceAccept !== 'function') return
  proto.serviceAccept = (svc: string) =>
    void bannedFor.then((left) => {
      if (left > 0) proto._banner = `${bannedMessage(left)}\r\n`
      serviceAccept.call(proto, svc)
    })
}

/**
 * Answers one SSH authentication request: a password (or an API key of that user) with the rules
 * of POST /sessions, or a public key registered through /public_keys. Resolves to the session
 * when the credentials are good (the caller accepts, once its own limits allow), null when the
 * request was refused or answered (a client asking whether a key would do), `banned` when the
 * login defender refuses the address (the caller disconnects).
 */
export async function authenticate(
  c: FrontEndContext,
  ctx: AuthContext,
  ip: string,
  logger: Logger,
  state: SftpAuthState,
): Promise<ProtocolSession | null | 'banned'> {
  const siteId = c.site.id
  if ((await state.bannedFor) > 0) {
    ctx.reject([])
    return 'banned'
  }
  try {
    if (ctx.method === 'password') {
      state.passwordTried = true
      state.awaitingCode = undefined
      try {
        return await c.services.protocolLogin.password(siteId, {
          username: ctx.username,
          password: ctx.password,
          ip,
          interface: 'sftp',
          addressChecked: !state.failed,
        })
      } catch (err) {
        if (!isCodeRequired(err)) throw err
        // The password was right: a partial success, and the code comes by keyboard-interactive.
        state.awaitingCode = { username: ctx.username, password: ctx.password }
        ctx.reject(['keyboard-interactive'], true)
        return null
      }
    }
    if (ctx.method === 'keyboard-interactive' && state.awaitingCode?.username === ctx.username) {
      const { password } = state.awaitingCode
      const answers = await new Promise<string[]>((resolve) =>
        ctx.prompt([{ prompt: 'Verification code: ', echo: false }], 'Two-factor sign-in', resolve),
      )
      try {
        return await c.services.protocolLogin.password(siteId, {
          username: ctx.username,
          password,
          otp: answers[0] ?? '',
          ip,
          interface: 'sftp',
          addressChecked: !state.failed,
        })
      } catch (err) {
        if (!isLoginRefusal(err) || err.status === 429) throw err
        // A wrong code: another try at the code (the connection's tries are counted as ever).
        state.failed = true
        logger.info({ username: ctx.username, type: err.type }, 'SFTP login refused')
        ctx.reject(['keyboard-interactive'])
        return null
      }
    }
    if (ctx.method === 'publickey') {
      const described = describeBlob(ctx.key.data)
      const fingerprint = described.fingerprintSha256
      const signed = ctx.signature !== undefined && ctx.blob !== undefined
      const user = await c.services.publicKeys.userForKey(siteId, ctx.username, fingerprint, signed)
      if (!user) {
        // Clients offer every key they have: an unknown one is not a failed login by itself, but
        // a connection that ends with only refused keys is one (scored when it closes).
        state.keyRefused = true
        state.keyUsername = ctx.username
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
        state.keyRefused = true
        state.keyUsername = ctx.username
        ctx.reject(['password', 'publickey'])
        return null
      }
      if (state.failed) await c.services.loginDefender.check(siteId, ip)
      return await c.services.protocolLogin.trusted(user, ip, 'sftp', 'with an SSH key')
    }
    ctx.reject(['password', 'publickey'])
    return null
  } catch (err) {
    state.failed = true
    if (isLoginRefusal(err) && err.status === 429) {
      logger.info({ username: ctx.username }, 'SFTP login refused: the address is banned')
      ctx.reject([])
      return 'banned'
    }
    if (isLoginRefusal(err)) logger.info({ username: ctx.username, type: err.type }, 'SFTP login refused')
    else logger.error({ err }, 'SFTP login failed')
    ctx.reject(['password', 'publickey'])
    return null
  }
}
