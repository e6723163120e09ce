import type { FastifyRequest } from 'fastify'
import { normalizePath } from '../api/paths.js'
import { DavError } from './dav-errors.js'

/**
 * Where the WebDAV tree sits in the server's URL space, and the translation between its URLs
 * and Wharf paths (no leading slash, '' for the root).
 */
export class DavPaths {
  constructor(readonly prefix: string) {}

  /** The Wharf path a request URL names; bad percent-encoding, `..`, control characters and over-long paths are 400. */
  pathOf(url: string): string {
    const q = url.indexOf('?')
    const pathname = q === -1 ? url : url.slice(0, q)
    if (pathname !== this.prefix && !pathname.startsWith(`${this.prefix}/`)) {
      throw new DavError(502, `${pathname} is outside the WebDAV tree ${this.prefix}/`)
    }
    return decodePath(pathname.slice(this.prefix.length))
  }

  /** The URL of a path, each name percent-encoded; a folder's ends in a slash. */
  href(path: string, folder: boolean): string {
    if (path === '') return `${this.prefix}/`
    const encoded = path.split('/').map(encodeSegment).join('/')
    return `${this.prefix}/${encoded}${folder ? '/' : ''}`
  }

  /**
   * The Wharf path a `Destination` header names: an absolute URL on this very host, or an
   * absolute path, inside the WebDAV tree. Missing or unparseable: 400; another host or a path
   * outside the tree: 502 (RFC 4918 §9.9.4, "a different server").
   */
  destinationOf(request: FastifyRequest): string {
    const raw = request.headers['destination']
    if (typeof raw !== 'string' || raw.trim() === '') {
      throw new DavError(400, 'COPY and MOVE need a Destination header')
    }
    const value = raw.trim()
    let pathname: string
    if (value.startsWith('/')) {
      pathname = value
    } else {
      let url: URL
      try {
        url = new URL(value)
      } catch {
        throw new DavError(400, `The Destination header is not a URL: ${value}`)
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        throw new DavError(400, 'The Destination must be an http or https URL')
      }
      if (url.host.toLowerCase() !== request.host.toLowerCase()) {
        throw new DavError(502, `The Destination is on another server (${url.host})`)
      }
      pathname = url.pathname
    }
    if (/[\s#]/.test(pathname) || pathname.includes('?')) {
      throw new DavError(400, 'The Destination must be a path without spaces, query or fragment')
    }
    return this.pathOf(pathname)
  }
}

function decodePath(rest: string): string {
  const names = rest.split('/').map((segment) => {
    let name: string
    try {
      name = decodeURIComponent(segment)
    } catch {
      throw new DavError(400, 'The URL is not valid percent-encoding')
    }
    if (name.includes('/')) throw new DavError(400, 'A name must not contain an encoded slash (%2F)')
    return name
  })
  // The rules of every Wharf path: `.`/`..`, empty names, control characters, 5000 characters.
  return normalizePath(names.join('/'))
}

/** RFC 3986 path segment: unreserved characters and sub-delims stay, everything else is escaped. */
function encodeSegment(name: string): string {
  return encodeURIComponent(name).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}
