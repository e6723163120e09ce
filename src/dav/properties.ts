import mime from 'mime-types'
import { entityTag, tagNamesVersion } from '../api/entity-tag.js'
import type { FsEntry } from '../modules/files/vfs/file-system.js'
import { DavError } from './dav-errors.js'
import { child, DAV_NS, isDav, propTag, type XmlElement, xmlEscape } from './dav-xml.js'
import type { DavLock } from './locks.js'
import { renderActiveLock } from './locks.js'

/** The live properties Wharf keeps for every resource (RFC 4918 §15). */
export const LIVE_PROPS = [
  'resourcetype',
  'displayname',
  'getcontentlength',
  'getlastmodified',
  'creationdate',
  'getetag',
  'getcontenttype',
  'supportedlock',
  'lockdiscovery',
] as const

export interface PropName {
  ns: string
  name: string
}

/** What a PROPFIND asks for. */
export type PropRequest = { kind: 'allprop' } | { kind: 'propname' } | { kind: 'prop'; names: PropName[] }

/**
 * Most properties one PROPFIND may ask for or one PROPPATCH may change: clients name a handful,
 * and the cap keeps the work (and a PROPFIND's answer, one element per name per resource) bounded.
 */
export const MAX_PROPERTIES = 500

/** 413 for a request naming more than MAX_PROPERTIES properties. */
export function tooManyProperties(method: string): DavError {
  return new DavError(
    413,
    `A ${method} may name at most ${MAX_PROPERTIES} properties`,
    '<W:too-many-properties/>',
  )
}

/** An empty body is allprop (RFC 4918 §9.1); anything but a `DAV:propfind` is 400. */
export function propRequestOf(body: XmlElement | null): PropRequest {
  if (body === null) return { kind: 'allprop' }
  if (!isDav(body, 'propfind')) throw new DavError(400, 'A PROPFIND body must be a DAV:propfind element')
  if (child(body, 'propname')) return { kind: 'propname' }
  if (child(body, 'allprop')) return { kind: 'allprop' }
  const prop = child(body, 'prop')
  if (!prop) throw new DavError(400, 'DAV:propfind must hold DAV:prop, DAV:allprop or DAV:propname')
  if (prop.children.length > MAX_PROPERTIES) throw tooManyProperties('PROPFIND')
  return { kind: 'prop', names: prop.children.map((c) => ({ ns: c.ns, name: c.name })) }
}

/** A file's entity tag: its MD5 when Wharf has it, else its change time and size. */
export function etagOf(e: FsEntry): string {
  return entityTag(e)
}

/** Whether a tag a client sent names this file's version (either of its tags: api/entity-tag.ts). */
export function etagMatches(tag: string, e: FsEntry): boolean {
  return tagNamesVersion(tag, e)
}

export function contentTypeOf(e: FsEntry): string {
  return mime.lookup(e.name) || 'application/octet-stream'
}

const httpDate = (ms: number) => new Date(ms).toUTCString()
const isoDate = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

const SUPPORTED_LOCK =
  '<D:lockentry><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>'

/** A live property's value as XML, or undefined when this resource has none (a folder's length). */
export function liveProp(name: string, e: FsEntry, locks: DavLock[], hrefOf: (l: DavLock) => string) {
  const file = e.type === 'file'
  switch (name) {
    case 'resourcetype':
      return file ? '' : '<D:collection/>'
    case 'displayname':
      return e.path === '' ? undefined : xmlEscape(e.name)
    case 'getcontentlength':
      return file ? String(e.size) : undefined
    case 'getlastmodified':
      return httpDate(e.providedMtime ?? e.mtime)
    case 'creationdate':
      return isoDate(e.createdAt || e.mtime)
    case 'getetag':
      return file ? xmlEscape(etagOf(e)) : undefined
    case 'getcontenttype':
      return file ? xmlEscape(contentTypeOf(e)) : undefined
    case 'supportedlock':
      return SUPPORTED_LOCK
    case 'lockdiscovery':
      return locks.map((l) => renderActiveLock(l, hrefOf(l))).join('')
    default:
      return undefined
  }
}

/** One `D:response` of a multistatus: the found properties under 200, the others under 404. */
export function propResponse(
  href: string,
  e: FsEntry,
  request: PropRequest,
  locks: DavLock[],
  hrefOf: (l: DavLock) => string,
): string {
  const found: string[] = []
  const missing: string[] = []
  if (request.kind === 'propname') {
    for (const name of LIVE_PROPS)
      if (liveProp(name, e, locks, hrefOf) !== undefined) found.push(`<D:${name}/>`)
  } else if (request.kind === 'allprop') {
    for (const name of LIVE_PROPS) {
      const value = liveProp(name, e, locks, hrefOf)
      if (value !== undefined) found.push(propTag(DAV_NS, name, value))
    }
  } else {
    for (const p of request.names) {
      const value = p.ns === DAV_NS ? liveProp(p.name, e, locks, hrefOf) : undefined
      if (value === undefined) missing.push(propTag(p.ns, p.name))
      else found.push(propTag(DAV_NS, p.name, value))
    }
  }
  let out = `<D:response><D:href>${xmlEscape(href)}</D:href>`
  if (found.length > 0 || missing.length === 0) out += propstat(found.join(''), '200 OK')
  if (missing.length > 0) out += propstat(missing.join(''), '404 Not Found')
  return `${out}</D:response>\n`
}

export function propstat(props: string, status: string): string {
  return `<D:propstat><D:prop>${props}</D:prop><D:status>HTTP/1.1 ${status}</D:status></D:propstat>`
}

export const MULTISTATUS_HEAD = '<?xml version="1.0" encoding="utf-8"?>\n<D:multistatus xmlns:D="DAV:">\n'
export const MULTISTATUS_TAIL = '</D:multistatus>\n'
