import net from 'node:net'
import { pipeline } from 'node:stream/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FileWriter, FsEntry } from '../modules/files/vfs/file-system.js'
import { reply, replyOf } from './ftp-errors.js'
import { listLine, mlsxFacts } from './ftp-listing.js'
import { plainAddress } from './ftp-passive.js'
import { ftpPathOf } from './ftp-paths.js'
import type { FtpCommand, FtpSession } from './ftp-session.js'

/**
 * How long after an upload's data connection ends its control connection must still be open for
 * the file to be published. Measured on two cores at a load of 10, a killed client's control
 * connection was seen closed up to 7 ms after its data connection; the wait is the price of
 * every STOR.
 */
const CONTROL_GRACE_MS = 50

/**
 * Runs one transfer on the passive data connection: 150, the work, then 226, or 426 when the
 * connection broke or ABOR stopped it. `failed` runs on every failure (an upload's abort).
 */
async function onData(
  s: FtpSession,
  what: string,
  work: (socket: net.Socket, stopped: () => string | null) => Promise<void>,
  failed: () => Promise<void> = async () => undefined,
): Promise<void> {
  const passive = s.passive
  s.passive = null
  try {
    if (!passive) throw reply(425, 'Use PASV or EPSV first')
    if (s.ctx.config.requireTls && !s.protectData) {
      throw reply(521, 'This server requires protected data connections: send PBSZ 0 and PROT P')
    }
  } catch (err) {
    passive?.close()
    await failed()
    throw err
  }
  let stopped: string | null = null
  let socket: net.Socket | null = null
  s.transfer = {
    abort(reason) {
      stopped ??= reason
      socket?.destroy()
      passive.close()
    },
  }
  s.reply(150, `Opening ${s.protectData ? 'TLS' : 'clear-text'} data connection for ${what}`)
  try {
    socket = await passive.connection(s.protectData ? s.ctx.tls.context : null)
    if (stopped) socket.destroy()
    socket.setTimeout(s.ctx.config.idleTimeoutMs, () => socket?.destroy(new Error('data connection idle')))
    await work(socket, () => stopped)
    if (stopped) throw new Error(stopped)
  } catch (err) {
    socket?.destroy()
    await failed()
    if (stopped) return s.reply(426, stopped)
    const r = replyOf(err)
    if (!r.fault) return s.reply(r.code, r.text)
    s.conn.log.debug({ err }, 'FTP transfer failed')
    return s.reply(426, 'Data connection closed; transfer aborted')
  } finally {
    s.transfer = null
    passive.close()
  }
  s.reply(226, 'Transfer complete')
}

/** Writes lines with back-pressure, then closes the data connection (end of the listing). */
async function sendLines(socket: net.Socket, lines: AsyncIterable<string>): Promise<void> {
  for await (const line of lines) {
    if (!socket.write(`${line}\r\n`)) await until(socket, 'drain')
  }
  socket.end()
  if (!socket.writableFinished) await until(socket, 'finish')
}

/** The event, or a failure once the connection is gone (ABOR destroys it without an error). */
function until(socket: net.Socket, event: 'drain' | 'finish'): Promise<void> {
  if (socket.destroyed) return Promise.reject(new Error('The data connection closed'))
  return new Promise((resolve, reject) => {
    const settle = (err?: Error) => {
      socket.off(event, done)
      socket.off('close', gone)
      socket.off('error', settle)
      if (err) reject(err)
      else resolve()
    }
    const done = () => settle()
    const gone = () => settle(new Error('The data connection closed'))
    socket.on(event, done)
    socket.on('close', gone)
    socket.on('error', settle)
  })
}

/** LIST's and NLST's arguments may start with ls options (`LIST -la`), which are ignored. */
function listTarget(arg: string): string {
  return arg.replace(/^(\s*-[a-zA-Z]+)+\s*/, '').trim()
}

async function* entriesOf(s: FtpSession, path: string, entry: FsEntry): AsyncGenerator<FsEntry> {
  if (entry.type === 'file') yield entry
  else yield* s.files.list(path)
}

async function* mapLines(entries: AsyncIterable<FsEntry>, line: (e: FsEntry) => string) {
  for await (const e of entries) yield line(e)
}

function listing(kind: 'LIST' | 'NLST' | 'MLSD'): FtpCommand {
  return {
    login: true,
    async run(s, arg) {
      const path = s.path(kind === 'MLSD' ? arg.trim() : listTarget(arg))
      const entry = await s.files.stat(path)
      if (kind === 'MLSD' && entry.type !== 'directory')
        throw reply(501, `${ftpPathOf(path)} is not a folder`)
      const now = s.ctx.now()
      const line =
        kind === 'LIST'
          ? (e: FsEntry) => listLine(e, now)
          : kind === 'MLSD'
            ? (e: FsEntry) => `${mlsxFacts(e)} ${e.name}`
            : (e: FsEntry) => e.name
      await onData(s, `the listing of ${ftpPathOf(path)}`, (socket) =>
        sendLines(socket, mapLines(entriesOf(s, path, entry), line)),
      )
    },
  }
}

const retr: FtpCommand = {
  login: true,
  async run(s, arg) {
    const path = s.path(arg)
    const file = await s.files.openFile(path)
    const start = s.restOffset
    if (start > file.entry.size) throw reply(554, `REST ${start} is past the end of the file`)
    await onData(s, `${ftpPathOf(path)} (${file.entry.size - start} bytes)`, async (socket) => {
      const bytes = await file.read({ start })
      await pipeline(bytes, socket)
    })
  },
}

/**
 * An upload streams into a writer, which publishes the file only once the client has closed
 * the data connection and the control connection is still there. FTP's stream mode marks the end
 * of a file only by closing the data connection, so a reset connection, a control connection
 * that went away, or ABOR are what tell a dropped upload from a finished one.
 */
function upload(kind: 'STOR' | 'APPE'): FtpCommand {
  return {
    login: true,
    creating: true,
    async run(s, arg) {
      if (arg === '') throw reply(501, `${kind} needs a file name`)
      if (s.restOffset > 0) throw reply(550, 'Resuming an upload is not supported: send the whole file')
      const path = s.path(arg)
      if (kind === 'APPE') {
        const there = await s.files.exists(path)
        if (there && there.size > 0) {
          throw reply(550, 'Appending to an existing file is not supported: upload the whole file again')
        }
      }
      let writer: FileWriter | null = await s.files.createWriter(path, { overwrite: true })
      await onData(
        s,
        ftpPathOf(path),
        async (socket, stopped) => {
          for await (const chunk of socket) {
            if (stopped()) return
            await writer!.write(chunk as Buffer)
          }
          // A client killed mid-file closes both connections at once, but their ends reach Wharf
          // in either order, and on a busy machine several milliseconds apart: the control
          // connection must still be open a moment after the data connection ended.
          await sleep(CONTROL_GRACE_MS)
          if (stopped() || s.isClosed) throw new Error('The control connection closed')
          const w = writer!
          writer = null
          await w.commit()
        },
        async () => {
          const w = writer
          writer = null
          await w?.abort()
        },
      )
    },
  }
}

const passiveCommands: Record<string, FtpCommand> = {
  PASV: {
    login: true,
    async run(s) {
      const announce = s.ctx.config.passiveAddress ?? plainAddress(s.socket.localAddress)
      if (!net.isIPv4(announce)) throw reply(425, 'PASV can only announce an IPv4 address: use EPSV')
      const { port } = await s.openPassive()
      const h = announce.replaceAll('.', ',')
      s.reply(227, `Entering Passive Mode (${h},${port >> 8},${port & 255})`)
    },
  },
  EPSV: {
    login: true,
    async run(s, arg) {
      const a = arg.trim().toUpperCase()
      if (a === 'ALL') return s.reply(200, 'EPSV ALL: only EPSV from now on')
      if (a !== '' && a !== '1' && a !== '2') return s.reply(522, 'Network protocol not supported, use (1,2)')
      const { port } = await s.openPassive()
      s.reply(229, `Entering Extended Passive Mode (|||${port}|)`)
    },
  },
  REST: {
    login: true,
    run(s, arg) {
      if (!/^\d{1,15}$/.test(arg.trim())) return s.reply(501, 'REST needs a byte offset')
      s.restOffset = Number(arg.trim())
      s.reply(350, `Restarting at ${s.restOffset}: send RETR to resume`)
    },
  },
  ABOR: {
    login: true,
    run(s) {
      s.passive?.close()
      s.passive = null
      s.reply(226, 'Abort done')
    },
  },
}

/** Passive mode, listings and file transfers. */
export const TRANSFER_COMMANDS: Record<string, FtpCommand> = {
  ...passiveCommands,
  LIST: listing('LIST'),
  NLST: listing('NLST'),
  MLSD: listing('MLSD'),
  RETR: retr,
  STOR: upload('STOR'),
  APPE: upload('APPE'),
}
