import type { FastifyReply, FastifyRequest } from 'fastify'
import { isWithin, parentOf } from '../../api/paths.js'
import { type DavContext, depthOf, filesOf, guardWrite } from '../dav-context.js'
import { DavError } from '../dav-errors.js'

/** `Overwrite: T` (the default) or `F` (RFC 4918 §10.6). */
function overwriteOf(request: FastifyRequest): boolean {
  const raw = request.headers['overwrite']
  if (raw === undefined) return true
  const v = String(raw).trim().toUpperCase()
  if (v === 'T') return true
  if (v === 'F') return false
  throw new DavError(400, `Overwrite must be T or F (got "${raw}")`)
}

/**
 * COPY and MOVE. With `Overwrite: T` whatever stands at the destination is replaced, as RFC 4918
 * asks: a file by a file in one step (the facade's overwrite), anything involving a folder by
 * deleting the destination first (the REST API would merge folders instead). 201 when the
 * destination is new, 204 when it replaced something.
 */
export function copyOrMove(ctx: DavContext, kind: 'COPY' | 'MOVE') {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const src = ctx.paths.pathOf(request.url)
    const dest = ctx.paths.destinationOf(request)
    const overwrite = overwriteOf(request)
    const depth = depthOf(request, 'infinity')
    if (depth === '1' || (kind === 'MOVE' && depth !== 'infinity')) {
      throw new DavError(400, `${kind} takes Depth ${kind === 'COPY' ? '0 or ' : ''}infinity`)
    }
    if (src === '' || dest === '')
      throw new DavError(403, `The root folder cannot be ${kind === 'COPY' ? 'copied' : 'moved'} or replaced`)
    // Paths are case-insensitive: `a.txt` → `A.txt` is a rename of the one file, never a copy onto itself.
    const caseOnly = src !== dest && src.toLowerCase() === dest.toLowerCase()
    if (src === dest || (caseOnly && kind === 'COPY')) {
      throw new DavError(403, 'The destination is the source itself')
    }
    const files = filesOf(ctx, request)
    const source = await files.stat(src)
    if (source.type === 'directory' && isWithin(dest, src)) {
      throw new DavError(
        403,
        `/${dest} is inside /${src}: nothing can be ${kind === 'COPY' ? 'copied' : 'moved'} into itself`,
      )
    }
    const target = caseOnly ? null : await files.exists(dest)
    if (target && !overwrite) throw new DavError(412, `/${target.path} exists and Overwrite is F`)
    // The REST move and copy create missing parents; WebDAV wants them to exist (RFC 4918 §9.8.5).
    const parent = parentOf(dest)
    if (parent !== '' && (await files.exists(parent))?.type !== 'directory') {
      throw new DavError(409, `The folder /${parent} does not exist`)
    }
    if (kind === 'MOVE') await guardWrite(ctx, request, src, { deep: true, membership: true })
    await guardWrite(ctx, request, dest, { deep: true, membership: true })
    const bothFiles = target?.type === 'file' && source.type === 'file'
    if (target && !bothFiles) {
      await files.delete(target.path, { recursive: true })
      ctx.locks.removeUnder(target.path)
    }
    if (kind === 'MOVE') {
      await files.rename(src, dest, { overwrite: bothFiles })
      ctx.locks.removeUnder(src)
    } else if (source.type === 'directory' && depth === '0') {
      await files.mkdir(dest)
    } else {
      await files.copy(src, dest, { overwrite: bothFiles })
    }
    return reply.code(target ? 204 : 201).send()
  }
}
