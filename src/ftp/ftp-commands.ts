import { isLoginRefusal } from '../modules/auth/protocol-login.js'
import { bannedMessage } from '../modules/login-defender/login-defender.js'
import { FILE_COMMANDS } from './ftp-file-commands.js'
import { FEATURES } from './ftp-listing.js'
import type { FtpCommand, FtpSession } from './ftp-session.js'
import { TRANSFER_COMMANDS } from './ftp-transfer-commands.js'

const MAX_FAILED_LOGINS = 3

const failures = new WeakMap<FtpSession, number>()

/** Commands that need no login: the connection's own state, TLS and the login itself. */
const SESSION_COMMANDS: Record<string, FtpCommand> = {
  USER: {
    login: false,
    run(s, arg) {
      if (s.login) return s.reply(530, 'Already logged in; connect again to change user')
      if (s.ctx.config.requireTls && !s.secure) {
        return s.reply(530, 'This server requires TLS: send AUTH TLS before logging in (FTPS, explicit TLS)')
      }
      if (arg === '') return s.reply(501, 'USER needs a user name')
      s.userName = arg
      s.reply(331, `Password required for ${arg.slice(0, 128)}`)
    },
  },
  PASS: {
    login: false,
    async run(s, arg) {
      if (s.login) return s.reply(503, 'Already logged in')
      if (s.ctx.config.requireTls && !s.secure) {
        return s.reply(530, 'This server requires TLS: send AUTH TLS before logging in (FTPS, explicit TLS)')
      }
      const username = s.userName
      if (username === null) return s.reply(503, 'Send USER first')
      s.userName = null
      let login: Awaited<ReturnType<typeof s.ctx.login>>
      try {
        login = await s.ctx.login(username, arg, s.ip)
      } catch (err) {
        if (!isLoginRefusal(err)) throw err
        // The address is banned by the login defender: 421, saying for how long.
        if (err.status === 429) return s.close(bannedMessage(err.extras.retryAfter ?? 60))
        const count = (failures.get(s) ?? 0) + 1
        failures.set(s, count)
        s.reply(530, 'Login incorrect')
        if (count >= MAX_FAILED_LOGINS) s.close('Too many failed logins')
        return
      }
      if (s.isClosed) return void login.end().catch(() => undefined)
      if (!s.loggedIn(login)) {
        await login.end().catch(() => undefined)
        return s.reply(530, 'This user has too many FTP sessions open; close one and try again')
      }
      s.reply(230, 'Logged in')
    },
  },
  AUTH: {
    login: false,
    run(s, arg) {
      if (!/^(TLS|TLS-C|SSL)$/i.test(arg.trim())) return s.reply(504, 'Only AUTH TLS is supported')
      if (s.secure) return s.reply(503, 'TLS is already on')
      if (s.login) return s.reply(503, 'Send AUTH TLS before logging in')
      s.upgradeToTls()
    },
  },
  PBSZ: {
    login: false,
    run(s) {
      if (!s.secure) return s.reply(503, 'Send AUTH TLS first')
      s.pbsz = true
      s.reply(200, 'PBSZ=0')
    },
  },
  PROT: {
    login: false,
    run(s, arg) {
      if (!s.secure) return s.reply(503, 'Send AUTH TLS first')
      const level = arg.trim().toUpperCase()
      if (level === 'P') {
        s.protectData = true
        return s.reply(200, 'Data connections are protected with TLS')
      }
      if (level === 'C') {
        if (s.ctx.config.requireTls)
          return s.reply(534, 'This server requires protected data connections: PROT P')
        s.protectData = false
        return s.reply(200, 'Data connections are in clear text')
      }
      s.reply(504, 'Only PROT P and PROT C are supported')
    },
  },
  FEAT: { login: false, run: (s) => s.reply(211, ['Features:', ...FEATURES, 'End']) },
  OPTS: {
    login: false,
    run(s, arg) {
      const opt = arg.trim().toUpperCase()
      if (/^UTF-?8( ON)?$/.test(opt)) return s.reply(200, 'UTF-8 is always on')
      if (opt.startsWith('MLST')) return s.reply(200, 'MLST OPTS type;size;modify;')
      s.reply(501, 'Option not supported')
    },
  },
  SYST: { login: false, run: (s) => s.reply(215, 'UNIX Type: L8') },
  HELP: {
    login: false,
    run: (s) => s.reply(214, ['Commands:', Object.keys(COMMANDS).sort().join(' '), 'Help OK']),
  },
  NOOP: { login: false, run: (s) => s.reply(200, 'OK') },
  QUIT: {
    login: false,
    run(s) {
      s.reply(221, 'Goodbye')
      s.close()
    },
  },
  TYPE: {
    login: false,
    run(s, arg) {
      const t = arg.trim().toUpperCase()
      if (/^(A|A N|I|L 8|L8)$/.test(t)) {
        return s.reply(
          200,
          `Type set to ${t}; files are always sent byte for byte, without line-end conversion`,
        )
      }
      s.reply(504, 'Only TYPE A and I are supported')
    },
  },
  MODE: {
    login: false,
    run: (s, arg) =>
      arg.trim().toUpperCase() === 'S' ? s.reply(200, 'Mode S') : s.reply(504, 'Only MODE S is supported'),
  },
  STRU: {
    login: false,
    run: (s, arg) =>
      arg.trim().toUpperCase() === 'F'
        ? s.reply(200, 'Structure F')
        : s.reply(504, 'Only STRU F is supported'),
  },
  ALLO: { login: false, run: (s) => s.reply(202, 'No storage allocation necessary') },
  PORT: { login: false, run: (s) => refuseActive(s) },
  EPRT: { login: false, run: (s) => refuseActive(s) },
  STAT: {
    login: false,
    async run(s, arg) {
      if (arg.trim() !== '' && s.login) return FILE_COMMANDS['STAT']!.run(s, arg)
      s.reply(211, [
        'Wharf FTP server status:',
        `Connected from ${s.ip}`,
        s.login ? `Logged in as ${s.login.principal.user?.username ?? ''}` : 'Not logged in',
        `Control connection ${s.secure ? 'protected by TLS' : 'in clear text'}; data connections ${s.protectData ? 'protected by TLS' : 'in clear text'}`,
        'End of status',
      ])
    },
  },
}

function refuseActive(s: FtpSession): void {
  s.reply(502, 'Active mode is not supported: use passive mode (PASV or EPSV)')
}

/** Every command the server knows, by verb; any other is 502. */
export type { FtpCommand } from './ftp-session.js'

export const COMMANDS: Record<string, FtpCommand> = {
  ...SESSION_COMMANDS,
  ...FILE_COMMANDS,
  ...TRANSFER_COMMANDS,
  STAT: SESSION_COMMANDS['STAT']!,
}
