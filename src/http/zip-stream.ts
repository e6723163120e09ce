import type { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import yazl from 'yazl'

/** One file of a ZIP: its name inside it, its size and time, and how to open and record it. */
export interface ZipFileEntry {
  name: string
  size: number
  mtime: number
  /** The bytes, asked for only when the ZIP reaches this entry; the read is recorded then. */
  open(): Promise<Readable>
}

/**
 * The entry of a stored file: its bytes opened when the ZIP reaches it, then its read recorded
 * (`record`); when recording fails, the opened stream is closed and the ZIP cut short.
 */
export function storedFileEntry(
  name: string,
  file: { size: number; mtime: number },
  open: () => Promise<Readable>,
  record: () => Promise<void>,
): ZipFileEntry {
  return {
    name,
    size: file.size,
    mtime: file.mtime,
    open: async () => {
      const stream = await open()
      try {
        await record()
      } catch (err) {
        stream.destroy()
        throw err
      }
      return stream
    },
  }
}

/**
 * Streams a ZIP (yazl, stored not compressed, ZIP64 when large, no temporary file): the folders,
 * then each file opened as the ZIP reaches it. A file lost mid-way cannot become an error response
 * any more (the status line has gone out): the ZIP is cut short.
 */
export function sendZip(
  request: FastifyRequest,
  reply: FastifyReply,
  zip: { name: string; directories: string[]; entries: ZipFileEntry[]; now: number },
): FastifyReply {
  const out = new yazl.ZipFile()
  for (const dir of zip.directories) out.addEmptyDirectory(dir, { mtime: new Date(zip.now) })
  for (const entry of zip.entries) {
    out.addReadStreamLazy(
      entry.name,
      { size: entry.size, mtime: new Date(entry.mtime), compress: false },
      (cb) => {
        entry
          .open()
          .then((stream) => cb(null, stream))
          .catch((err: Error) => cb(err, undefined as never))
      },
    )
  }
  out.on('error', (err: Error) => {
    request.log.warn({ err }, 'ZIP cut short')
    ;(out.outputStream as unknown as Readable).destroy(err)
  })
  out.end()
  return reply
    .code(200)
    .header('Content-Type', 'application/zip')
    .header('Content-Disposition', `attachment; filename="${zip.name.replace(/[^A-Za-z0-9_.-]/g, '_')}"`)
    .send(out.outputStream)
}
