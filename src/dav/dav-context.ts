import type { FastifyRequest } from 'fastify'
import { parentOf } from '../api/paths.js'
import type { HttpContext } from '../http/http-context.js'
import type { Principal } from '../identity/principal.js'
import type { FsEntry, UserFileSystem } from '../modules/files/vfs/file-system.js'
import type { DavAuthenticator } from './dav-auth.js'
import { DavError } from './dav-errors.js'
import type { DavPaths } from './dav-paths.js'
import { xmlEscape } from './dav-xml.js'
import { ifHolds, parseIf, submittedTokens } from './if-header.js'
import type { DavLock, LockTable } from './locks.js'
import { etagMatches } from './properties.js'

/** What every WebDAV handler works with: the tree's URLs, the lock table, the services. */
export interface DavContext {
  container: HttpContext
  paths: DavPaths
  locks: LockTable
  auth: DavAuthenticator
  /** Largest XML body (PROPFIND, PROPPATCH, LOCK) read. */
  bodyLimit: number
}

/** The tree as the request's principal sees it, every Action recorded with interface `dav`. */
export function filesOf(ctx: DavContext, request: FastifyRequest): UserFileSystem {
  return ctx.container.services.fileSystem.as(request.principal, 'dav')
}

/** Who holds a lock: only they may use its token. */
export function holderOf(p: Principal): string {
  return p.user ? `u${p.user.id}` : `k${p.apiKey?.id ?? 0}`
}

/** `Depth` as RFC 4918 §10.2 has it; anything else is 400. */
export function depthOf(request: FastifyRequest, fallback: '0' | '1' | 'infinity'): '0' | '1' | 'infinity' {
  const raw = request.headers['depth']
  if (raw === undefined) return fallback
  const v = String(raw).trim().toLowerCase()
  if (v === '0' || v === '1' || v === 'infinity') return v
  throw new DavError(400, `Depth must be 0, 1 or infinity (got "${raw}")`)
}

export interface WriteGuard {
  /** Also the locks on everything inside (a folder deleted, moved or replaced). */
  deep?: boolean
  /** The path appears or disappears: the parent folder's own lock guards its list of members. */
  membership?: boolean
}

/**
 * The `If` header and the locks, before a write to `path` (RFC 4918 §7, §10.4): the header, when
 * sent, must hold (else 412), and every lock the write touches must have its token submitted
 * by the one who took it (else 423 with `lock-token-submitted`).
 */
export async function guardWrite(
  ctx: DavContext,
  request: FastifyRequest,
  path: string,
  guard: WriteGuard = {},
): Promise<void> {
  const header = request.headers['if']
  const lists = typeof header === 'string' && header.trim() !== '' ? parseIf(header) : []
  if (lists.length > 0) {
    const files = filesOf(ctx, request)
    const holds = await ifHolds(lists, async (resource) => {
      let target = path
      if (resource !== undefined) {
        try {
          target = ctx.paths.pathOf(resource.startsWith('/') ? resource : new URL(resource).pathname)
        } catch {
          return { tokens: new Set(), etagMatches: null }
        }
      }
      const entry = await files.exists(target).catch(() => null)
      return {
        tokens: new Set(ctx.locks.covering(target).map((l) => l.token)),
        etagMatches: entry && entry.type === 'file' ? (tag: string) => etagMatches(tag, entry) : null,
      }
    })
    if (!holds) throw new DavError(412, 'The If header does not hold for this resource')
  }
  const submitted = submittedTokens(lists)
  const holder = holderOf(request.principal)
  const touched: DavLock[] = [
    ...ctx.locks.covering(path),
    ...(guard.deep ? ctx.locks.inside(path) : []),
    ...(guard.membership && path !== '' ? ctx.locks.on(parentOf(path)).filter((l) => l.depth === '0') : []),
  ]
  const blocking = touched.find((l) => !(submitted.has(l.token) && l.holder === holder))
  if (blocking) {
    throw new DavError(
      423,
      `${blocking.path || '/'} is locked: send its lock token in an If header`,
      `<D:lock-token-submitted><D:href>${xmlEscape(ctx.paths.href(blocking.path, false))}</D:href></D:lock-token-submitted>`,
    )
  }
}

/**
 * `If-Match` and `If-None-Match` before a write (RFC 9110 §13.1): davfs2 creates files with
 * `If-None-Match: *` and updates them with `If-Match: <etag>`, so that two writers never silently
 * overwrite each other. 412 when they do not hold.
 */
export function checkEntityTags(request: FastifyRequest, entry: FsEntry | null): void {
  const file = entry && entry.type === 'file' ? entry : null
  const listed = (header: string) => header.split(',').map((t) => t.trim().replace(/^W\//, ''))
  const named = (header: string) => file !== null && listed(header).some((t) => etagMatches(t, file))
  const ifMatch = request.headers['if-match']
  if (ifMatch !== undefined) {
    const holds = ifMatch.trim() === '*' ? entry !== null : named(ifMatch)
    if (!holds) throw new DavError(412, 'If-Match does not hold: the resource has changed or is not there')
  }
  const ifNoneMatch = request.headers['if-none-match']
  if (ifNoneMatch !== undefined) {
    const matches = ifNoneMatch.trim() === '*' ? entry !== null : named(ifNoneMatch)
    if (matches) throw new DavError(412, 'If-None-Match does not hold: the resource is already there')
  }
}
