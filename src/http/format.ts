import { createRequire } from 'node:module'
import type { X2jOptions, XMLParser, XMLValidator } from 'fast-xml-parser'
import Negotiator from 'negotiator'
import { ERRORS } from '../api/error-factories.js'
import { ApiError } from '../api/errors.js'
import { xmlEscape } from '../api/xml-text.js'

export type Format = 'json' | 'xml'

export const API_PREFIX = '/api/rest/v1'

/**
 * Routes whose last path segments are a file path: there a `.json` or `.xml` ending is part of
 * the file's name, never a format suffix (the Files.com SDKs send no suffix on these).
 */
const FILE_PATH_PREFIXES = [
  '/files/',
  '/folders/',
  '/behaviors/folders/',
  '/file_actions/',
  '/history/files/',
  '/history/folders/',
  '/downloads/',
  '/zip_downloads/',
  '/public/bundle_downloads/',
  '/public/bundle_zips/',
]

/** A share link's file routes, behind its code: `/public/bundles/{code}/files/…` and `/folders/…`. */
const SHARE_FILE_PATH = /^\/public\/bundles\/[^/]+\/(?:files|folders)\//

/** Routes whose last segment is an IP address: its dots are no suffix, but a `.json`/`.xml` after it is. */
const ADDRESS_PREFIXES = ['/banned_addresses/']

export interface SuffixResult {
  url: string
  format: Format | undefined
  /** The suffix named a format other than json/xml. */
  badSuffix: string | undefined
}

/** Strips a `.json`/`.xml` suffix from an API URL (Fastify's rewriteUrl). */
export function splitFormatSuffix(url: string): SuffixResult {
  if (!url.startsWith(API_PREFIX)) return { url, format: undefined, badSuffix: undefined }
  const q = url.indexOf('?')
  const pathPart = q === -1 ? url : url.slice(0, q)
  const query = q === -1 ? '' : url.slice(q)
  const rel = pathPart.slice(API_PREFIX.length)
  if (FILE_PATH_PREFIXES.some((p) => rel.startsWith(p)) || SHARE_FILE_PATH.test(rel))
    return { url, format: undefined, badSuffix: undefined }
  const lastSlash = pathPart.lastIndexOf('/')
  const last = pathPart.slice(lastSlash + 1)
  const dot = last.lastIndexOf('.')
  if (dot <= 0) return { url, format: undefined, badSuffix: undefined }
  const ext = last.slice(dot + 1).toLowerCase()
  const stripped = pathPart.slice(0, lastSlash + 1 + dot) + query
  if (ext === 'json' || ext === 'xml') return { url: stripped, format: ext, badSuffix: undefined }
  if (ADDRESS_PREFIXES.some((p) => rel.startsWith(p))) return { url, format: undefined, badSuffix: undefined }
  return { url: stripped, format: undefined, badSuffix: ext }
}

// In order of preference when the Accept header ranks them equally (`*/*`, `application/*`).
const MEDIA_TYPES = ['application/json', 'application/xml', 'text/xml']
const negotiated = new Map<string, Format>()

/**
 * The format the Accept header prefers, as RFC 9110 ranks it (quality values, the most specific
 * range deciding each type's quality, `q=0` refusing): JSON unless XML ranks higher, and JSON when
 * the header accepts neither (a bad Accept header is not worth a 406). jshttp's negotiator does the
 * ranking; its answer is kept per header value, since the same few headers come again and again.
 */
export function negotiate(accept: string | undefined): Format {
  if (!accept) return 'json'
  let format = negotiated.get(accept)
  if (format === undefined) {
    let preferred: string | undefined
    try {
      preferred = new Negotiator({ headers: { accept } }).mediaType(MEDIA_TYPES)
    } catch {
      preferred = undefined
    }
    format = preferred === 'application/xml' || preferred === 'text/xml' ? 'xml' : 'json'
    if (accept.length <= 256) {
      if (negotiated.size >= 1000) negotiated.clear()
      negotiated.set(accept, format)
    }
  }
  return format
}

// ---------- XML out ----------
// Written by hand, not with fast-xml-parser's XMLBuilder: the builder writes every element without
// content in one form, chosen by its `suppressEmptyNode` option, while Wharf's XML has two: an empty
// string is `<name></name>`, and null, an empty list or an empty object is self-closing
// (`<name nil="true"/>`, `<name type="array"/>`, `<name/>`). Either setting changes bytes that
// clients already read; everything else (nesting, lists, typed values, escaping) came out the same.

const XML_NAME = /^[A-Za-z_][A-Za-z0-9._-]*$/

/** Keys become element names: anything that is not a plain XML name is made one, never injected. */
function xmlName(key: string): string {
  if (XML_NAME.test(key)) return key
  const cleaned = key.replace(/[^A-Za-z0-9._-]/g, '_')
  return /^[A-Za-z_]/.test(cleaned) ? cleaned : `_${cleaned}`
}

function singular(name: string): string {
  if (name.endsWith('ies')) return `${name.slice(0, -3)}y`
  if (name.endsWith('s') && name.length > 1) return name.slice(0, -1)
  return 'item'
}

function element(name: string, value: unknown, indent: string, floats: ReadonlySet<string>): string {
  if (value === null || value === undefined) return `${indent}<${name} nil="true"/>\n`
  if (typeof value === 'boolean') return `${indent}<${name} type="boolean">${value}</${name}>\n`
  if (typeof value === 'number') {
    const t = Number.isInteger(value) && !floats.has(name) ? 'integer' : 'float'
    return `${indent}<${name} type="${t}">${value}</${name}>\n`
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return `${indent}<${name} type="array"/>\n`
    const child = singular(name)
    return `${indent}<${name} type="array">\n${value.map((v) => element(child, v, `${indent}  `, floats)).join('')}${indent}</${name}>\n`
  }
  if (typeof value === 'object') {
    const inner = Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => element(xmlName(k), v, `${indent}  `, floats))
      .join('')
    return inner ? `${indent}<${name}>\n${inner}${indent}</${name}>\n` : `${indent}<${name}/>\n`
  }
  return `${indent}<${name}>${xmlEscape(String(value))}</${name}>\n`
}

/**
 * Renders a payload in the spec's XML shapes: a list as `<plural type="array">` of `<singular>`
 * items, a record under its hyphenated singular root; typed elements, `nil="true"` for null.
 */
export function toXml(
  payload: unknown,
  root: string,
  itemName?: string,
  floats: ReadonlySet<string> = NO_FLOATS,
): string {
  const head = '<?xml version="1.0" encoding="UTF-8"?>\n'
  if (Array.isArray(payload)) {
    if (payload.length === 0) return `${head}<${root} type="array"/>\n`
    const child = itemName ?? singular(root)
    return `${head}<${root} type="array">\n${payload.map((p) => element(child, p, '  ', floats)).join('')}</${root}>\n`
  }
  return head + element(root, payload, '', floats)
}

const NO_FLOATS: ReadonlySet<string> = new Set()

// ---------- XML in ----------

const PREDEFINED_ENTITIES: Readonly<Record<string, string>> = {
  lt: '<',
  gt: '>',
  amp: '&',
  apos: "'",
  quot: '"',
}

// A reference, or an ampersand that starts none (which XML does not allow either).
const REFERENCE = /&(#x[0-9A-Fa-f]+|#[0-9]+|[A-Za-z_][A-Za-z0-9._-]*);|&/g

/** Char of XML 1.0 (§2.2): what a character reference may stand for. */
const isXmlChar = (cp: number) =>
  cp === 0x9 ||
  cp === 0xa ||
  cp === 0xd ||
  (cp >= 0x20 && cp <= 0xd7ff) ||
  (cp >= 0xe000 && cp <= 0xfffd) ||
  (cp >= 0x10000 && cp <= 0x10ffff)

/**
 * Text and attribute values as XML 1.0 defines them without a DTD: the five predefined entities
 * and character references decoded, anything else refused (Wharf reads no DTD, so every other
 * entity is undeclared). CDATA sections never reach this, so they keep what they hold.
 */
export function decodeXmlReferences(text: string): string {
  if (!text.includes('&')) return text
  return text.replace(REFERENCE, (whole, ref: string | undefined) => {
    if (ref === undefined) throw ERRORS.invalidBody('Malformed XML: a bare & (write &amp;)')
    if (ref.startsWith('#')) {
      const hex = ref[1] === 'x'
      const cp = Number.parseInt(ref.slice(hex ? 2 : 1), hex ? 16 : 10)
      if (!isXmlChar(cp)) throw ERRORS.invalidBody(`Malformed XML: ${whole} is not an XML character`)
      return String.fromCodePoint(cp)
    }
    if (Object.hasOwn(PREDEFINED_ENTITIES, ref)) return PREDEFINED_ENTITIES[ref]!
    throw ERRORS.invalidBody(`Malformed XML: undeclared entity ${whole}`)
  })
}

/**
 * fast-xml-parser's entity decoder for bodies Wharf reads: the predefined entities and numeric
 * references only. `declared` is thrown for a declared entity, reached only from a DOCTYPE, which
 * the body's parser refuses first: declared entities never count.
 */
function xmlEntityDecoder(declared: () => Error) {
  return {
    decode: decodeXmlReferences,
    reset() {},
    setXmlVersion() {},
    setExternalEntities() {},
    addInputEntities() {
      throw declared()
    },
  }
}

/**
 * The parser and validator of XML bodies Wharf reads (the REST API's, WebDAV's), loaded with the
 * first XML body (~3 MiB of memory a JSON-only server never needs): attributes kept as `@_name`,
 * text never converted to numbers or booleans, only the predefined entities and numeric
 * references (`declared` is thrown for any other), plus the reader's own `options`.
 */
export function lazyXmlReader(
  declared: () => Error,
  options: X2jOptions,
): () => { parser: XMLParser; validator: typeof XMLValidator } {
  let xml: { parser: XMLParser; validator: typeof XMLValidator } | undefined
  return () => {
    if (xml) return xml
    const fxp = createRequire(import.meta.url)('fast-xml-parser') as typeof import('fast-xml-parser')
    const parser = new fxp.XMLParser({
      ignoreAttributes: false,
      attributeNamePrefix: '@_',
      parseTagValue: false,
      parseAttributeValue: false,
      trimValues: true,
      processEntities: true,
      entityDecoder: xmlEntityDecoder(declared),
      ...options,
    })
    xml = { parser, validator: fxp.XMLValidator }
    return xml
  }
}

const xmlParser = lazyXmlReader(() => ERRORS.invalidBody('XML bodies must not declare entities'), {
  isArray: () => false,
})

/** Parses an XML request body: the root's child elements are the fields. Never resolves a DTD. */
export function parseXmlBody(text: string): Record<string, unknown> {
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) {
    throw ERRORS.invalidBody('XML bodies must not contain a DOCTYPE or entity declarations')
  }
  if (text.trim() === '') return {}
  const { parser, validator } = xmlParser()
  const valid = validator.validate(text)
  if (valid !== true) throw ERRORS.invalidBody(`Malformed XML: ${valid.err.msg}`)
  let doc: Record<string, unknown>
  try {
    doc = parser.parse(text) as Record<string, unknown>
  } catch (err) {
    if (err instanceof ApiError) throw err
    // fast-xml-parser throws on names such as __proto__: the body is bad, not the server.
    throw ERRORS.invalidBody(`Malformed XML: ${(err as Error).message}`)
  }
  const roots = Object.keys(doc).filter((k) => !k.startsWith('?'))
  if (roots.length !== 1) throw ERRORS.invalidBody('An XML body must have exactly one root element')
  const root = doc[roots[0]!]
  if (root === '' || root === undefined) return {}
  if (typeof root !== 'object' || root === null) {
    throw ERRORS.invalidBody('The XML root element must contain field elements')
  }
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(root as Record<string, unknown>)) {
    if (k.startsWith('@_')) continue
    out[fieldName(k)] = xmlValue(v)
  }
  return out
}

// Field names become object keys: the ones that reach an object's prototype are refused outright.
const RESERVED_NAMES = new Set(['__proto__', 'constructor', 'prototype'])

function fieldName(name: string): string {
  if (RESERVED_NAMES.has(name)) throw ERRORS.invalidBody(`Reserved XML element name: ${name}`)
  return name
}

function xmlValue(node: unknown): unknown {
  if (node === null || typeof node !== 'object') return node ?? ''
  if (Array.isArray(node)) return node.map(xmlValue)
  const n = node as Record<string, unknown>
  if (n['@_nil'] === 'true') return null
  const type = n['@_type']
  const text = n['#text'] as string | undefined
  const children = Object.entries(n).filter(([k]) => !k.startsWith('@_') && k !== '#text')
  if (type === 'array') {
    return children.flatMap(([, v]) => (Array.isArray(v) ? v : [v])).map(xmlValue)
  }
  if (children.length > 0) {
    const obj: Record<string, unknown> = {}
    for (const [k, v] of children) obj[fieldName(k)] = xmlValue(v)
    return obj
  }
  const s = text ?? ''
  if (type === 'integer' || type === 'float') {
    const num = Number(s)
    return s.trim() !== '' && Number.isFinite(num) ? num : s
  }
  if (type === 'boolean') return s === 'true' ? true : s === 'false' ? false : s
  return s
}
