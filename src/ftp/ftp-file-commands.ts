import { reply } from './ftp-errors.js'
import { ftpTime, listLine, mlsxFacts, modifiedAt, parseFtpTime } from './ftp-listing.js'
import { ftpPathOf, quotedPath } from './ftp-paths.js'
import type { FtpCommand, FtpSession } from './ftp-session.js'

async function folderAt(s: FtpSession, arg: string) {
  const path = s.path(arg)
  const entry = await s.files.stat(path)
  if (entry.type !== 'directory') throw reply(550, `${ftpPathOf(path)} is not a folder`)
  return path
}

async function changeFolder(s: FtpSession, arg: string): Promise<void> {
  s.cwd = await folderAt(s, arg === '' ? '/' : arg)
  s.reply(250, `Folder changed to ${ftpPathOf(s.cwd)}`)
}

const pwd: FtpCommand = {
  login: true,
  run: (s) => s.reply(257, `${quotedPath(s.cwd)} is the current folder`),
}
const cwd: FtpCommand = { login: true, run: changeFolder }
const cdup: FtpCommand = { login: true, run: (s) => changeFolder(s, '..') }

const mkd: FtpCommand = {
  login: true,
  creating: true,
  async run(s, arg) {
    if (arg === '') throw reply(501, 'MKD needs a folder name')
    const path = s.path(arg)
    if (path === '') throw reply(550, 'The root folder already exists')
    await s.files.mkdir(path)
    s.reply(257, `${quotedPath(path)} created`)
  },
}

const rmd: FtpCommand = {
  login: true,
  async run(s, arg) {
    if (arg === '') throw reply(501, 'RMD needs a folder name')
    const path = await folderAt(s, arg)
    if (path === '') throw reply(550, 'The root folder cannot be removed')
    await s.files.delete(path)
    s.reply(250, `${ftpPathOf(path)} removed`)
  },
}

/** Commands on files and folders by name (transfers are in ftp-transfer-commands.ts). */
export const FILE_COMMANDS: Record<string, FtpCommand> = {
  PWD: pwd,
  XPWD: pwd,
  CWD: cwd,
  XCWD: cwd,
  CDUP: cdup,
  XCUP: cdup,
  MKD: mkd,
  XMKD: mkd,
  RMD: rmd,
  XRMD: rmd,
  DELE: {
    login: true,
    async run(s, arg) {
      if (arg === '') throw reply(501, 'DELE needs a file name')
      const path = s.path(arg)
      const entry = await s.files.stat(path)
      if (entry.type === 'directory') throw reply(550, `${ftpPathOf(path)} is a folder: use RMD`)
      await s.files.delete(path)
      s.reply(250, `${ftpPathOf(path)} deleted`)
    },
  },
  RNFR: {
    login: true,
    async run(s, arg) {
      if (arg === '') throw reply(501, 'RNFR needs a name')
      const path = s.path(arg)
      if (path === '') throw reply(550, 'The root folder cannot be renamed')
      await s.files.stat(path)
      s.renameFrom = path
      s.reply(350, 'Ready for RNTO')
    },
  },
  RNTO: {
    login: true,
    creating: true,
    async run(s, arg) {
      const from = s.renameFrom
      s.renameFrom = null
      if (from === null) throw reply(503, 'Send RNFR first')
      if (arg === '') throw reply(501, 'RNTO needs a name')
      const to = s.path(arg)
      const there = to.toLowerCase() === from.toLowerCase() ? null : await s.files.exists(to)
      // A file may replace a file (as rename(2) does); nothing replaces a folder.
      if (there?.type === 'directory') throw reply(550, `${ftpPathOf(to)} is a folder that already exists`)
      await s.files.rename(from, to, { overwrite: there !== null })
      s.reply(250, `Renamed to ${ftpPathOf(to)}`)
    },
  },
  SIZE: {
    login: true,
    async run(s, arg) {
      const entry = await s.files.stat(s.path(arg))
      if (entry.type === 'directory') throw reply(550, `${ftpPathOf(entry.path)} is not a file`)
      s.reply(213, String(entry.size))
    },
  },
  MDTM: {
    login: true,
    async run(s, arg) {
      const entry = await s.files.stat(s.path(arg))
      s.reply(213, ftpTime(modifiedAt(entry)))
    },
  },
  /** MFMT YYYYMMDDHHMMSS path: sets the file's own modification time (write permission). */
  MFMT: {
    login: true,
    async run(s, arg) {
      const at = arg.indexOf(' ')
      const when = at === -1 ? null : parseFtpTime(arg.slice(0, at))
      const name = at === -1 ? '' : arg.slice(at + 1)
      if (when === null || name === '') throw reply(501, 'Syntax: MFMT YYYYMMDDHHMMSS path')
      await s.files.setModifiedTime(s.path(name), when)
      s.reply(213, `Modify=${ftpTime(when)}; ${name}`)
    },
  },
  MLST: {
    login: true,
    async run(s, arg) {
      const path = s.path(arg)
      const entry = await s.files.stat(path)
      s.reply(250, [`Listing ${ftpPathOf(path)}`, `${mlsxFacts(entry)} ${ftpPathOf(path)}`, 'End'])
    },
  },
  /** STAT with a path: the LIST of it over the control connection (RFC 959). */
  STAT: {
    login: true,
    async run(s, arg) {
      const path = s.path(arg)
      const entry = await s.files.stat(path)
      const lines: string[] = []
      const now = s.ctx.now()
      if (entry.type === 'file') lines.push(listLine(entry, now))
      else for await (const e of s.files.list(path)) if (lines.length < 10_000) lines.push(listLine(e, now))
      s.reply(213, [`Status of ${ftpPathOf(path)}:`, ...lines, 'End of status'])
    },
  },
}
