import type { FastifyReply, FastifyRequest } from 'fastify'
import { ERRORS } from '../../api/error-factories.js'
import { type DavContext, depthOf, filesOf, guardWrite, holderOf } from '../dav-context.js'
import { DavError } from '../dav-errors.js'
import { child, parseDavXml, readBody, serializeXml, xmlEscape } from '../dav-xml.js'
import { parseIf, submittedTokens } from '../if-header.js'
import { type DavLock, renderActiveLock, timeoutOf } from '../locks.js'

function lockAnswer(ctx: DavContext, reply: FastifyReply, lock: DavLock, status: number) {
  const body =
    '<?xml version="1.0" encoding="utf-8"?>\n<D:prop xmlns:D="DAV:"><D:lockdiscovery>' +
    renderActiveLock(lock, ctx.paths.href(lock.path, false)) +
    '</D:lockdiscovery></D:prop>\n'
  return reply
    .code(status)
    .header('Lock-Token', `<${lock.token}>`)
    .type('application/xml; charset=utf-8')
    .send(body)
}

/**
 * LOCK: exclusive write locks only (a shared lock is 501 Not Implemented, as Go's and other
 * small servers answer). A lock on a path where nothing is creates an empty file (201), as
 * RFC 4918 §9.10.4 asks and Office and Finder expect. Without a body it refreshes the lock
 * named in the If header.
 */
export function lock(ctx: DavContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const path = ctx.paths.pathOf(request.url)
    const text = await readBody(request, ctx.bodyLimit)
    const timeout = timeoutOf(String(request.headers['timeout'] ?? ''))
    const holder = holderOf(request.principal)
    const files = filesOf(ctx, request)
    if (text.trim() === '') {
      const header = request.headers['if']
      if (typeof header !== 'string')
        throw new DavError(400, 'A LOCK without a body refreshes a lock: send its token in an If header')
      const tokens = submittedTokens(parseIf(header))
      const held = ctx.locks.covering(path).find((l) => tokens.has(l.token) && l.holder === holder)
      if (!held)
        throw new DavError(
          412,
          'No lock of yours on this resource has the token sent',
          'lock-token-matches-request-uri',
        )
      return lockAnswer(ctx, reply, ctx.locks.refresh(held, timeout), 200)
    }
    const info = parseDavXml(text)
    if (info.ns !== 'DAV:' || info.name !== 'lockinfo')
      throw new DavError(400, 'A LOCK body must be a DAV:lockinfo')
    const scope = child(info, 'lockscope')
    if (!scope || (!child(scope, 'exclusive') && !child(scope, 'shared')))
      throw new DavError(400, 'DAV:lockinfo needs a DAV:lockscope')
    if (child(scope, 'shared')) throw new DavError(501, 'Only exclusive locks are supported')
    const type = child(info, 'locktype')
    if (!type || !child(type, 'write'))
      throw new DavError(400, 'Only write locks exist (DAV:locktype DAV:write)')
    const depth = depthOf(request, 'infinity')
    if (depth === '1') throw new DavError(400, 'LOCK takes Depth 0 or infinity')
    const owner = child(info, 'owner')

    const conflicting = [...ctx.locks.covering(path), ...(depth === 'infinity' ? ctx.locks.inside(path) : [])]
    if (conflicting.length > 0) {
      throw new DavError(423, `${path || '/'} is already locked`, 'no-conflicting-lock')
    }
    await requireLockRights(ctx, request, path)
    let created = false
    if (!(await files.exists(path))) {
      await guardWrite(ctx, request, path, { membership: true })
      const writer = await files.createWriter(path, { overwrite: false })
      await writer.commit()
      created = true
    }
    const lock = ctx.locks.create({
      path,
      depth: depth === '0' ? '0' : 'infinity',
      owner: owner ? xmlEscape(owner.text) + owner.children.map(serializeXml).join('') : '',
      holder,
      timeoutSeconds: timeout,
    })
    return lockAnswer(ctx, reply, lock, created ? 201 : 200)
  }
}

/**
 * Only who may write may lock or unlock: a lock stops others' writes. The credential's own
 * limits count, not only its user's: a key restricted to another folder, or with permission set
 * `none`, can neither take nor remove its user's locks.
 */
async function requireLockRights(ctx: DavContext, request: FastifyRequest, path: string): Promise<void> {
  if (request.principal.permissionSet === 'none') {
    throw ERRORS.fullPermissionRequired('This API key has permission set "none": it can only read itself')
  }
  const access = await ctx.container.services.fileAccess.of(request.principal)
  access.require(path, 'write')
}

export function unlock(ctx: DavContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const path = ctx.paths.pathOf(request.url)
    const m = /^\s*<([^>]+)>\s*$/.exec(String(request.headers['lock-token'] ?? ''))
    if (!m) throw new DavError(400, 'UNLOCK needs a Lock-Token header: <opaquelocktoken:…>')
    await requireLockRights(ctx, request, path)
    const lock = ctx.locks.get(m[1]!)
    if (!lock || !ctx.locks.covering(path).includes(lock)) {
      throw new DavError(
        409,
        'No lock with this token covers this resource',
        'lock-token-matches-request-uri',
      )
    }
    if (lock.holder !== holderOf(request.principal))
      throw new DavError(403, 'This lock was taken by someone else')
    // The lock may be on a folder above the path: removing it takes the rights LOCK took there.
    if (lock.path !== path) await requireLockRights(ctx, request, lock.path)
    ctx.locks.remove(lock.token)
    return reply.code(204).send()
  }
}
