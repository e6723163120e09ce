import { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FsEntry } from '../../modules/files/vfs/file-system.js'
import { type DavContext, depthOf, filesOf } from '../dav-context.js'
import { DavError, isApiError } from '../dav-errors.js'
import { parseDavXml, readBody, xmlEscape } from '../dav-xml.js'
import {
  contentTypeOf,
  etagMatches,
  etagOf,
  MULTISTATUS_HEAD,
  MULTISTATUS_TAIL,
  propRequestOf,
  propResponse,
} from '../properties.js'

export const DAV_METHODS = [
  'OPTIONS',
  'GET',
  'HEAD',
  'PUT',
  'DELETE',
  'PROPFIND',
  'PROPPATCH',
  'MKCOL',
  'COPY',
  'MOVE',
  'LOCK',
  'UNLOCK',
]

/** Class 1 and 2; `MS-Author-Via` makes Windows' WebDAV client treat the tree as writable. */
export function options(_ctx: DavContext) {
  return async (_request: FastifyRequest, reply: FastifyReply) =>
    reply
      .headers({ DAV: '1, 2', Allow: DAV_METHODS.join(', '), 'MS-Author-Via': 'DAV', 'Content-Length': '0' })
      .send()
}

/** PROPFIND with Depth 0 or 1; Depth infinity (or none, which means it) is refused as many servers do. */
export function propfind(ctx: DavContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const path = ctx.paths.pathOf(request.url)
    const depth = depthOf(request, 'infinity')
    const text = await readBody(request, ctx.bodyLimit)
    const asked = propRequestOf(text.trim() === '' ? null : parseDavXml(text))
    if (depth === 'infinity') {
      throw new DavError(
        403,
        'PROPFIND with Depth infinity is not served: ask with Depth 0 or 1',
        'propfind-finite-depth',
      )
    }
    const files = filesOf(ctx, request)
    const entry = await files.stat(path)
    const hrefOfLock = (l: { path: string }) => ctx.paths.href(l.path, false)
    const response = (p: string, e: FsEntry) =>
      propResponse(ctx.paths.href(p, e.type === 'directory'), e, asked, ctx.locks.covering(p), hrefOfLock)
    async function* body() {
      yield MULTISTATUS_HEAD
      yield response(path, entry)
      if (depth === '1' && entry.type === 'directory') {
        // Children under the path as the client wrote it, so that their URLs extend the one it asked.
        for await (const e of files.list(path)) yield response(path === '' ? e.name : `${path}/${e.name}`, e)
      }
      yield MULTISTATUS_TAIL
    }
    return reply.code(207).type('application/xml; charset=utf-8').send(Readable.from(body()))
  }
}

function fileHeaders(e: FsEntry): Record<string, string> {
  return {
    'Content-Type': contentTypeOf(e),
    ETag: etagOf(e),
    'Last-Modified': new Date(e.mtime).toUTCString(),
    'Accept-Ranges': 'bytes',
  }
}

/** 304 when the client's copy is current (If-None-Match, else If-Modified-Since); 412 when If-Match fails. */
function notModified(request: FastifyRequest, e: FsEntry): boolean {
  const ifMatch = request.headers['if-match']
  if (ifMatch && ifMatch.trim() !== '*' && !ifMatch.split(',').some((t) => etagMatches(t.trim(), e))) {
    throw new DavError(412, 'If-Match does not match the file')
  }
  const ifNoneMatch = request.headers['if-none-match']
  if (ifNoneMatch)
    return ifNoneMatch.trim() === '*' || ifNoneMatch.split(',').some((t) => etagMatches(t.trim(), e))
  const since = Date.parse(request.headers['if-modified-since'] ?? '')
  return Number.isFinite(since) && Math.floor(e.mtime / 1000) * 1000 <= since
}

/**
 * One byte range (`bytes=a-b`, `bytes=a-`, `bytes=-n`), or null to send the whole file: no
 * Range, a malformed one, several ranges, or an If-Range the file no longer matches (RFC 9110 §14).
 */
function rangeOf(request: FastifyRequest, e: FsEntry): { start: number; end: number } | null {
  const header = request.headers.range
  if (!header) return null
  const ifRange = request.headers['if-range']
  if (
    typeof ifRange === 'string' &&
    !etagMatches(ifRange, e) &&
    ifRange !== new Date(e.mtime).toUTCString()
  ) {
    return null
  }
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (!m || (m[1] === '' && m[2] === '')) return null
  const size = e.size
  let start: number
  let end: number
  if (m[1] === '') {
    start = Math.max(0, size - Number(m[2]))
    end = size - 1
  } else {
    start = Number(m[1])
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1)
    if (m[2] !== '' && Number(m[2]) < start) return null
  }
  if (start >= size || (m[1] === '' && Number(m[2]) === 0)) {
    throw new DavError(416, `The range is outside the file (${size} bytes)`, undefined, {
      'Content-Range': `bytes */${size}`,
    })
  }
  return { start, end }
}

export function get(ctx: DavContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const path = ctx.paths.pathOf(request.url)
    const files = filesOf(ctx, request)
    if (path === '') return folderPage(ctx, request, reply, path)
    let file: Awaited<ReturnType<typeof files.openFile>>
    try {
      file = await files.openFile(path)
    } catch (err) {
      if (isApiError(err, 'bad-request/cannot-download-directory'))
        return folderPage(ctx, request, reply, path)
      throw err
    }
    const e = file.entry
    reply.headers(fileHeaders(e))
    if (notModified(request, e)) return reply.code(304).send()
    const range = rangeOf(request, e)
    if (range) {
      reply
        .code(206)
        .header('Content-Range', `bytes ${range.start}-${range.end}/${e.size}`)
        .header('Content-Length', String(range.end - range.start + 1))
      return reply.send(await file.read(range))
    }
    reply.header('Content-Length', String(e.size))
    return reply.send(await file.read())
  }
}

/** HEAD answers from the file's metadata alone: no bytes opened, no download recorded. */
export function head(ctx: DavContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const path = ctx.paths.pathOf(request.url)
    const e = await filesOf(ctx, request).stat(path)
    if (e.type === 'directory') return reply.type('text/html; charset=utf-8').send()
    reply.headers(fileHeaders(e))
    if (notModified(request, e)) return reply.code(304).send()
    return reply.header('Content-Length', String(e.size)).send()
  }
}

/** A folder in a browser: a plain list of links (WebDAV clients list with PROPFIND). */
async function folderPage(ctx: DavContext, request: FastifyRequest, reply: FastifyReply, path: string) {
  const files = filesOf(ctx, request)
  await files.stat(path)
  const items: string[] = []
  for await (const e of files.list(path)) {
    const href = ctx.paths.href(path === '' ? e.name : `${path}/${e.name}`, e.type === 'directory')
    items.push(
      `<li><a href="${xmlEscape(href)}">${xmlEscape(e.name)}${e.type === 'directory' ? '/' : ''}</a></li>`,
    )
  }
  const title = xmlEscape(`/${path}`)
  return reply
    .type('text/html; charset=utf-8')
    .header('Content-Security-Policy', "default-src 'none'")
    .send(
      `<!doctype html><meta charset="utf-8"><title>${title}</title><h1>${title}</h1><ul>${items.join('')}</ul>\n`,
    )
}
