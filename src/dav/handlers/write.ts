import type { FastifyReply, FastifyRequest } from 'fastify'
import { hasBody } from '../../http/content-encoding.js'
import type { FsEntry } from '../../modules/files/vfs/file-system.js'
import { checkEntityTags, type DavContext, depthOf, filesOf, guardWrite } from '../dav-context.js'
import { DavError, isApiError } from '../dav-errors.js'
import { isSettableTime, lastModifiedOf, ocMtimeOf } from '../dav-mtime.js'
import { child, DAV_NS, isDav, parseDavXml, propTag, readBody, xmlEscape } from '../dav-xml.js'
import {
  etagOf,
  LIVE_PROPS,
  MAX_PROPERTIES,
  MULTISTATUS_HEAD,
  MULTISTATUS_TAIL,
  propstat,
  tooManyProperties,
} from '../properties.js'

/** The entry at a path, or null when there is none or the caller may not look (a write-only inbox). */
async function existingForWrite(
  ctx: DavContext,
  request: FastifyRequest,
  path: string,
): Promise<FsEntry | null> {
  try {
    return await filesOf(ctx, request).exists(path)
  } catch (err) {
    if (isApiError(err) && err.type.startsWith('not-authorized/')) return null
    throw err
  }
}

/**
 * PUT streams the body into a facade writer as it arrives (the writer's promise is the
 * back-pressure: nothing is read ahead of the store), and publishes it only once the body is
 * complete. A body cut short leaves nothing but staging for the janitor.
 */
export function put(ctx: DavContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const path = ctx.paths.pathOf(request.url)
    if (path === '') throw new DavError(405, 'The root folder cannot be written as a file')
    if (request.headers['content-range'] !== undefined) {
      throw new DavError(400, 'PUT with Content-Range (a partial update) is not supported')
    }
    const before = await existingForWrite(ctx, request, path)
    if (before?.type === 'directory') throw new DavError(405, `${before.path} is a folder`)
    checkEntityTags(request, before)
    await guardWrite(ctx, request, path, { membership: before === null })
    const mtime = ocMtimeOf(request)
    const writer = await filesOf(ctx, request).createWriter(path, { overwrite: true })
    if (mtime !== null) writer.setModifiedTime(mtime)
    try {
      for await (const chunk of request.raw) await writer.write(chunk as Buffer)
      if (!request.raw.complete) throw new DavError(400, 'The request body ended early')
    } catch (err) {
      await writer.abort()
      throw err
    }
    const entry = await writer.commit()
    // ownCloud's answer, which rclone reads to know the time was kept.
    if (mtime !== null) reply.header('X-OC-Mtime', 'accepted')
    return reply
      .code(before ? 204 : 201)
      .header('ETag', etagOf(entry))
      .send()
  }
}

export function mkcol(ctx: DavContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const path = ctx.paths.pathOf(request.url)
    if (hasBody(request.headers)) throw new DavError(415, 'MKCOL takes no body')
    if (path === '' || (await filesOf(ctx, request).exists(path))) {
      throw new DavError(405, `Something already exists at /${path}`)
    }
    await guardWrite(ctx, request, path, { membership: true })
    try {
      await filesOf(ctx, request).mkdir(path)
    } catch (err) {
      if (isApiError(err, 'processing-failure/destination-exists')) throw new DavError(405, err.message)
      if (isApiError(err) && err.type.startsWith('not-found/')) throw new DavError(409, err.message)
      throw err
    }
    return reply.code(201).send()
  }
}

export function remove(ctx: DavContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const path = ctx.paths.pathOf(request.url)
    if (depthOf(request, 'infinity') !== 'infinity')
      throw new DavError(400, 'DELETE takes Depth infinity only')
    if (path === '') throw new DavError(403, 'The root folder cannot be deleted')
    const files = filesOf(ctx, request)
    checkEntityTags(request, await files.stat(path))
    await guardWrite(ctx, request, path, { deep: true, membership: true })
    await files.delete(path, { recursive: true })
    ctx.locks.removeUnder(path)
    return reply.code(204).send()
  }
}

/** Windows sets its own times on every file it writes; Wharf keeps its own and says yes to these. */
const WINDOWS_NS = 'urn:schemas-microsoft-com:'

/**
 * PROPPATCH: Wharf stores no dead properties. Windows' Win32 times are accepted and ignored
 * (Windows reports a failed copy otherwise); removing a property that is not there succeeds
 * (RFC 4918 §14.23); anything else is 403 (`cannot-modify-protected-property` for a live one),
 * and then, the update being all or nothing, the rest is 424. At most MAX_PROPERTIES changes (413).
 */
export function proppatch(ctx: DavContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const path = ctx.paths.pathOf(request.url)
    const body = parseDavXml(await readBody(request, ctx.bodyLimit))
    if (!isDav(body, 'propertyupdate'))
      throw new DavError(400, 'A PROPPATCH body must be a DAV:propertyupdate')
    const changes: { ns: string; name: string; set: boolean }[] = []
    let mtime: number | null = null
    for (const op of body.children) {
      if (!isDav(op, 'set') && !isDav(op, 'remove')) continue
      const prop = child(op, 'prop')
      for (const p of prop?.children ?? []) {
        if (changes.length === MAX_PROPERTIES) throw tooManyProperties('PROPPATCH')
        const change = { ns: p.ns, name: p.name, set: op.name === 'set' }
        changes.push(change)
        if (isSettableTime(change)) mtime = lastModifiedOf(p)
      }
    }
    const e = await filesOf(ctx, request).stat(path)
    await guardWrite(ctx, request, path)
    const live = (c: { ns: string; name: string }) =>
      c.ns === DAV_NS && (LIVE_PROPS as readonly string[]).includes(c.name)
    const refused = new Set(
      changes.filter((c) => !isSettableTime(c) && (live(c) || (c.set && c.ns !== WINDOWS_NS))),
    )
    if (mtime !== null && refused.size === 0) await filesOf(ctx, request).setModifiedTime(path, mtime)
    const groups = new Map<string, string[]>()
    for (const c of changes) {
      const status = refused.has(c) ? '403 Forbidden' : refused.size > 0 ? '424 Failed Dependency' : '200 OK'
      // One pass, each list grown in place: the answer costs as much as the request, no more.
      let props = groups.get(status)
      if (props === undefined) {
        props = []
        groups.set(status, props)
      }
      props.push(propTag(c.ns, c.name))
    }
    const href = ctx.paths.href(path, e.type === 'directory')
    let out = `${MULTISTATUS_HEAD}<D:response><D:href>${xmlEscape(href)}</D:href>`
    for (const [status, props] of groups) out += propstat(props.join(''), status)
    if ([...refused].some(live)) out += '<D:error><D:cannot-modify-protected-property/></D:error>'
    out += `</D:response>\n${MULTISTATUS_TAIL}`
    return reply.code(207).type('application/xml; charset=utf-8').send(out)
  }
}
