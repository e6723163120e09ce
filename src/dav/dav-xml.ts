export { xmlEscape } from '../api/xml-text.js'

import type { FastifyRequest } from 'fastify'
import { ApiError } from '../api/errors.js'
import { xmlEscape } from '../api/xml-text.js'
import { lazyXmlReader } from '../http/format.js'
import { DavError } from './dav-errors.js'

export const DAV_NS = 'DAV:'

/** An element of a request body with its namespace resolved, so that `D:prop`, `a:prop` and a default-namespace `prop` are one thing. */
export interface XmlElement {
  ns: string
  name: string
  children: XmlElement[]
  text: string
}

const xmlParser = lazyXmlReader(() => new DavError(400, 'XML bodies must not declare entities'), {
  preserveOrder: true,
})

type Node = Record<string, unknown>

/**
 * Most markup (`<`: tags, comments, CDATA) a WebDAV XML body may hold, counted before it is parsed:
 * room for the most properties a request may name (properties.ts, MAX_PROPERTIES, each maybe an
 * open and a close tag) and a lock owner's XML, while parsing a body of tens of thousands of
 * elements (a third of a second for a megabyte) never holds the server.
 */
export const MAX_XML_TAGS = 4000

function tooMuchMarkup(text: string): boolean {
  let tags = 0
  for (let i = text.indexOf('<'); i !== -1; i = text.indexOf('<', i + 1)) {
    if (++tags > MAX_XML_TAGS) return true
  }
  return false
}

/**
 * Parses a WebDAV request body into namespace-resolved elements. A DOCTYPE (and so any entity
 * declaration or external reference) is refused outright, as for every XML Wharf reads;
 * anything not well-formed is 400; more than MAX_XML_TAGS tags is 413.
 */
export function parseDavXml(text: string): XmlElement {
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) throw new DavError(400, 'XML bodies must not contain a DOCTYPE')
  if (tooMuchMarkup(text)) {
    throw new DavError(413, `An XML body may hold at most ${MAX_XML_TAGS} tags`, '<W:too-many-elements/>')
  }
  const { parser, validator } = xmlParser()
  const valid = validator.validate(text)
  if (valid !== true) throw new DavError(400, `Malformed XML: ${valid.err.msg}`)
  let nodes: Node[]
  try {
    nodes = parser.parse(text) as Node[]
  } catch (err) {
    if (err instanceof DavError) throw err
    if (err instanceof ApiError) throw new DavError(400, err.message)
    throw new DavError(400, `Malformed XML: ${(err as Error).message}`)
  }
  const roots = nodes.filter((n) => elementName(n) !== undefined)
  if (roots.length !== 1) throw new DavError(400, 'An XML body must have exactly one root element')
  return toElement(roots[0]!, new Map([['xml', 'http://www.w3.org/XML/1998/namespace']]))
}

function elementName(n: Node): string | undefined {
  return Object.keys(n).find((k) => k !== ':@' && k !== '#text' && !k.startsWith('?'))
}

function toElement(n: Node, parentScope: Map<string, string>): XmlElement {
  const qname = elementName(n)!
  const attrs = (n[':@'] ?? {}) as Record<string, string>
  let scope = parentScope
  for (const [k, v] of Object.entries(attrs)) {
    if (k === '@_xmlns' || k.startsWith('@_xmlns:')) {
      if (scope === parentScope) scope = new Map(parentScope)
      scope.set(k === '@_xmlns' ? '' : k.slice('@_xmlns:'.length), String(v))
    }
  }
  const colon = qname.indexOf(':')
  const prefix = colon === -1 ? '' : qname.slice(0, colon)
  const name = colon === -1 ? qname : qname.slice(colon + 1)
  const ns = scope.get(prefix)
  if (ns === undefined && prefix !== '') throw new DavError(400, `Malformed XML: undeclared prefix ${prefix}`)
  const children: XmlElement[] = []
  let text = ''
  for (const c of (n[qname] ?? []) as Node[]) {
    if ('#text' in c) text += String(c['#text'])
    else if (elementName(c) !== undefined) children.push(toElement(c, scope))
  }
  return { ns: ns ?? '', name, children, text }
}

export const isDav = (e: XmlElement, name: string) => e.ns === DAV_NS && e.name === name

export function child(e: XmlElement, name: string): XmlElement | undefined {
  return e.children.find((c) => isDav(c, name))
}

/** An element written back (a lock's owner): DAV names with `D:`, any other with its namespace declared in place. */
export function serializeXml(e: XmlElement): string {
  const open = e.ns === DAV_NS ? `D:${e.name}` : e.name
  const decl = e.ns === DAV_NS ? '' : ` xmlns="${xmlEscape(e.ns)}"`
  const inner = xmlEscape(e.text) + e.children.map(serializeXml).join('')
  return inner === '' ? `<${open}${decl}/>` : `<${open}${decl}>${inner}</${open}>`
}

/** A property element as a response shows it: DAV names with `D:`, others with their namespace. */
export function propTag(ns: string, name: string, inner = ''): string {
  if (ns === DAV_NS) return inner === '' ? `<D:${name}/>` : `<D:${name}>${inner}</D:${name}>`
  const decl = ` xmlns="${xmlEscape(ns)}"`
  return inner === '' ? `<${name}${decl}/>` : `<${name}${decl}>${inner}</${name}>`
}

/** A request body read as text, up to `limit` bytes (a WebDAV XML body is small). */
export async function readBody(request: FastifyRequest, limit: number): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of request.raw) {
    size += (chunk as Buffer).length
    if (size > limit) throw new DavError(413, `The request body is larger than ${limit} bytes`)
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks).toString('utf8')
}
