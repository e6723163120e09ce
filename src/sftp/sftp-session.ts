import type net from 'node:net'
import type { Logger } from 'pino'
import type { SFTPWrapper } from 'ssh2'
import { ERRORS } from '../api/error-factories.js'
import { ApiError } from '../api/errors.js'
import type { FsEntry, UserFileSystem } from '../modules/files/vfs/file-system.js'
import {
  attrsOf,
  longnameOf,
  mtimeOf,
  OPEN_MODE,
  realPath,
  STATUS,
  statusOf,
  wharfPath,
} from './sftp-format.js'
import { DirHandle, type Handle, ReadHandle, WriteHandle } from './sftp-handles.js'
import { MAX_READ_BYTES, ReadGate } from './sftp-read-gate.js'
import type { ReadStreams } from './sftp-read-streams.js'
import type { WriteBudget } from './sftp-write-budget.js'

const READDIR_BATCH = 100
const MAX_HANDLES = 256

/** What an SFTP channel needs from its connection. */
export interface SftpContext {
  /** The file tree as the logged-in user sees it through SFTP (kept fresh by the connection). */
  files(): Promise<UserFileSystem>
  /** Called on every request: the idle clock starts again. */
  activity(): void
  logger: Logger
  now: () => number
  /** The connection's count of WRITE bytes held in memory, shared with its other channels. */
  writeBudget: WriteBudget
  /** The connection's open read streams, shared with its other channels. */
  readStreams: ReadStreams
  /** The connection's socket: reads wait while it is backed up. */
  socket: net.Socket | undefined
}

/**
 * One SFTP channel: the protocol's requests answered through the file-system facade. Every
 * handler answers exactly once, and an unexpected error becomes a FAILURE status, never a crash.
 */
export function serveSftp(sftp: SFTPWrapper, ctx: SftpContext): { close(): Promise<void> } {
  const handles = new Map<number, Handle>()
  let nextHandle = 1
  const reads = new ReadGate(sftp, ctx.socket)

  const fail = (reqid: number, err: unknown) => {
    const { code, message } = statusOf(err)
    if (!(err instanceof ApiError)) ctx.logger.error({ err }, 'SFTP request failed')
    sftp.status(reqid, code, message)
  }
  /** Runs a request's work, answering with its status (or the failure). */
  const handle = (reqid: number, work: () => Promise<void>) => {
    ctx.activity()
    work().catch((err: unknown) => {
      try {
        fail(reqid, err)
      } catch {
        // The channel is gone: there is no one left to answer.
      }
    })
  }
  const ok = (reqid: number) => sftp.status(reqid, STATUS.OK)
  const newHandle = (h: Handle): Buffer => {
    if (handles.size >= MAX_HANDLES) throw ERRORS.requestParamsInvalid('Too many open files')
    const id = nextHandle++
    handles.set(id, h)
    const buf = Buffer.alloc(4)
    buf.writeUInt32BE(id)
    return buf
  }
  const find = (buf: Buffer): Handle => {
    const h = buf.length === 4 ? handles.get(buf.readUInt32BE(0)) : undefined
    if (!h) throw ERRORS.badRequest('No such handle')
    return h
  }
  const release = (buf: Buffer) => handles.delete(buf.readUInt32BE(0))
  const name = (reqid: number, entries: FsEntry[]) =>
    sftp.name(
      reqid,
      entries.map((e) => ({ filename: e.name, longname: longnameOf(e, ctx.now()), attrs: attrsOf(e) })),
    )

  sftp.on('REALPATH', (reqid, path) =>
    handle(reqid, async () => {
      const real = realPath(path)
      sftp.name(reqid, [{ filename: real, longname: real, attrs: {} as never }])
    }),
  )

  for (const event of ['STAT', 'LSTAT'] as const) {
    sftp.on(event, (reqid: number, path: string) =>
      handle(reqid, async () => {
        sftp.attrs(reqid, attrsOf(await (await ctx.files()).stat(wharfPath(path))))
      }),
    )
  }

  sftp.on('FSTAT', (reqid, buf) =>
    handle(reqid, async () => {
      const h = find(buf)
      if (h.kind === 'dir') throw ERRORS.badRequest('FSTAT of a folder handle')
      const entry =
        h.kind === 'read' ? h.file.entry : await (await ctx.files()).stat(h.writer.path).catch(() => null)
      sftp.attrs(
        reqid,
        entry
          ? attrsOf(entry)
          : {
              mode: 0o100644,
              uid: 0,
              gid: 0,
              size: h.kind === 'write' ? h.writer.written : 0,
              atime: 0,
              mtime: 0,
            },
      )
    }),
  )

  // A modification time is kept (the file's provided_mtime: `put -p`, rclone's set-modtime);
  // modes, owners and sizes are not, and are accepted so that such clients go on.
  sftp.on('SETSTAT', (reqid, path, attrs) =>
    handle(reqid, async () => {
      const files = await ctx.files()
      const mtime = mtimeOf(attrs)
      if (mtime === null) await files.stat(wharfPath(path))
      else await files.setModifiedTime(wharfPath(path), mtime)
      ok(reqid)
    }),
  )
  sftp.on('FSETSTAT', (reqid, buf, attrs) =>
    handle(reqid, async () => {
      const h = find(buf)
      const mtime = mtimeOf(attrs)
      // A file being written gets its time when it is published (OpenSSH sets it before CLOSE).
      if (mtime !== null && h.kind === 'write') h.writer.setModifiedTime(mtime)
      else if (mtime !== null && h.kind === 'read') {
        await (await ctx.files()).setModifiedTime(h.file.entry.path, mtime)
      }
      ok(reqid)
    }),
  )

  sftp.on('OPEN', (reqid, path, flags) =>
    handle(reqid, async () => {
      const files = await ctx.files()
      const p = wharfPath(path)
      const wants = (f: number) => (flags & f) !== 0
      if (wants(OPEN_MODE.READ) && !wants(OPEN_MODE.WRITE)) {
        sftp.handle(reqid, newHandle(new ReadHandle(await files.openFile(p), ctx.readStreams)))
        return
      }
      if (!wants(OPEN_MODE.WRITE) || wants(OPEN_MODE.READ) || wants(OPEN_MODE.APPEND)) {
        sftp.status(
          reqid,
          STATUS.OP_UNSUPPORTED,
          'Files are read whole or written whole, not both or appended to',
        )
        return
      }
      const writer = await files.createWriter(p, { overwrite: !wants(OPEN_MODE.EXCL) })
      try {
        sftp.handle(reqid, newHandle(new WriteHandle(writer, ctx.writeBudget)))
      } catch (err) {
        await writer.abort()
        throw err
      }
    }),
  )

  sftp.on('READ', (reqid, buf, offset, length) =>
    handle(reqid, async () => {
      const h = find(buf)
      if (h.kind !== 'read') throw ERRORS.badRequest('This handle is not open for reading')
      // A longer read is answered short, as the protocol allows; the client asks for the rest.
      const bytes = Math.min(length, MAX_READ_BYTES)
      await reads.admit(bytes)
      try {
        const data = await h.read(offset, bytes)
        if (data === null || data.length === 0) sftp.status(reqid, STATUS.EOF)
        else sftp.data(reqid, data)
      } finally {
        reads.done(bytes)
      }
    }),
  )

  sftp.on('WRITE', (reqid, buf, offset, data) =>
    handle(reqid, async () => {
      const h = find(buf)
      if (h.kind !== 'write') throw ERRORS.badRequest('This handle is not open for writing')
      await h.write(offset, data)
      ok(reqid)
    }),
  )

  sftp.on('CLOSE', (reqid, buf) =>
    handle(reqid, async () => {
      const h = find(buf)
      release(buf)
      if (h.kind === 'write') await h.commit()
      else h.close()
      ok(reqid)
    }),
  )

  sftp.on('OPENDIR', (reqid, path) =>
    handle(reqid, async () => {
      const entries = (await ctx.files()).list(wharfPath(path))
      // The first page is read now, so that a missing folder or a refusal answers OPENDIR itself.
      const first = await entries.next()
      sftp.handle(reqid, newHandle(new DirHandle(entries, first)))
    }),
  )

  sftp.on('READDIR', (reqid, buf) =>
    handle(reqid, async () => {
      const h = find(buf)
      if (h.kind !== 'dir') throw ERRORS.badRequest('This handle is not a folder')
      const batch = await h.next(READDIR_BATCH)
      if (batch.length === 0) sftp.status(reqid, STATUS.EOF)
      else name(reqid, batch)
    }),
  )

  sftp.on('MKDIR', (reqid, path) =>
    handle(reqid, async () => {
      await (await ctx.files()).mkdir(wharfPath(path))
      ok(reqid)
    }),
  )

  sftp.on('RMDIR', (reqid, path) =>
    handle(reqid, async () => {
      const files = await ctx.files()
      const p = wharfPath(path)
      if ((await files.stat(p)).type !== 'directory') throw ERRORS.folderMustNotBeAFile(`${p} is a file`)
      await files.delete(p)
      ok(reqid)
    }),
  )

  sftp.on('REMOVE', (reqid, path) =>
    handle(reqid, async () => {
      const files = await ctx.files()
      const p = wharfPath(path)
      if ((await files.stat(p)).type === 'directory') {
        throw ERRORS.badRequest(`${p} is a folder: remove it with RMDIR`)
      }
      await files.delete(p)
      ok(reqid)
    }),
  )

  // SFTP v3: a rename never replaces an existing file.
  sftp.on('RENAME', (reqid, from, to) =>
    handle(reqid, async () => {
      await (await ctx.files()).rename(wharfPath(from), wharfPath(to), { overwrite: false })
      ok(reqid)
    }),
  )

  sftp.on('READLINK', (reqid) => sftp.status(reqid, STATUS.OP_UNSUPPORTED, 'Wharf has no links'))
  sftp.on('SYMLINK', (reqid) => sftp.status(reqid, STATUS.OP_UNSUPPORTED, 'Wharf has no links'))

  return {
    /** The channel or connection went away: half-written files are dropped, not published. */
    async close() {
      const open = [...handles.values()]
      handles.clear()
      await Promise.all(
        open.map(async (h) => {
          if (h.kind === 'write') await h.abort().catch(() => undefined)
          else h.close()
        }),
      )
    },
  }
}
