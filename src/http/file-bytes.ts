import type { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { contentDisposition } from '../api/content-disposition.js'
import { entityTag, type TaggedVersion, tagNamesVersion } from '../api/entity-tag.js'
import { ERRORS } from '../api/error-factories.js'
import type { ByteRange } from '../blobs/blob-store.js'
import type { Download, DownloadService } from '../modules/files/download-service.js'
import { mimeTypeOf } from '../modules/files/file-json.js'

/** 416 (the type's own status), with the size a client needs to ask again. */
const rangeNotSatisfiable = (size: number) =>
  ERRORS.invalidRange(`The range asked for lies outside the file's ${size} bytes`, {
    headers: { 'Content-Range': `bytes */${size}` },
  })

/**
 * One `Range: bytes=…` header against a size. `null`: serve the whole file (no header, a header
 * that is not a single byte range — several ranges are served whole rather than as multipart —
 * or a malformed one, which RFC 9110 says to ignore). Throws 416 processing-failure/invalid-range.
 */
export function parseRange(header: string | undefined, size: number): ByteRange | null {
  if (header === undefined) return null
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header)
  if (!m || (m[1] === '' && m[2] === '')) return null
  if (m[1] === '') {
    const suffix = Number(m[2])
    if (suffix === 0 || size === 0) throw rangeNotSatisfiable(size)
    return { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(m[1])
  const end = m[2] === '' ? size - 1 : Number(m[2])
  if (m[2] !== '' && end < start) return null
  if (start >= size) throw rangeNotSatisfiable(size)
  return { start, end: Math.min(end, size - 1) }
}

/** `If-Range`: the range applies only if the client's copy is still current (ETag or date). */
function ifRangeHolds(header: string | undefined, version: TaggedVersion): boolean {
  if (header === undefined) return true
  const v = header.trim()
  if (v.startsWith('"') || v.startsWith('W/')) return tagNamesVersion(v, version)
  const date = Date.parse(v)
  return Number.isFinite(date) && Math.floor(date / 1000) === Math.floor(version.mtime / 1000)
}

// The header is the contract's: a blob store's own download links carry the same one.
export { contentDisposition }

/**
 * Streams a file (never buffered whole), with Range and HEAD support. The `read` Action is
 * recorded for a GET or POST that starts at byte 0 — a whole download, or the first piece of a
 * ranged or resumed one — so one download is one read however the client splits it.
 */
export async function sendFileBytes(
  request: FastifyRequest,
  reply: FastifyReply,
  downloads: DownloadService,
  d: Download,
): Promise<FastifyReply> {
  const { row } = d
  // The md5 once known (it is computed after the upload); until then the change time and size,
  // as WebDAV's entity tag: never one tag shared by two versions of a file.
  const etag = entityTag(row)
  const ifRange = request.headers['if-range']
  // A stale If-Range means "send the whole current file", so the Range is not even looked at.
  const range = ifRangeHolds(typeof ifRange === 'string' ? ifRange : undefined, row)
    ? parseRange(request.headers.range, row.size)
    : null
  const length = range ? range.end - range.start + 1 : row.size

  // Opened (and the read recorded) before any header is set, so that an error still gets a
  // clean error response.
  let stream: Readable | undefined
  if (request.method !== 'HEAD') {
    stream = await downloads.open(row, range ?? undefined, undefined, d.reader.interface)
    if (!range || range.start === 0) {
      try {
        await downloads.recordRead(d, request.ip)
      } catch (err) {
        stream.destroy()
        throw err
      }
    }
  }
  reply
    .code(range ? 206 : 200)
    .header('Content-Type', mimeTypeOf(row.name))
    .header('Content-Length', String(length))
    .header('Accept-Ranges', 'bytes')
    .header('ETag', etag)
    .header('Last-Modified', new Date(row.mtime).toUTCString())
    .header('Content-Disposition', contentDisposition(row.name))
  if (range) reply.header('Content-Range', `bytes ${range.start}-${range.end}/${row.size}`)
  return reply.send(stream)
}
