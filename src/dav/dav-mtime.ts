import type { FastifyRequest } from 'fastify'
import { DavError } from './dav-errors.js'
import { DAV_NS, type XmlElement } from './dav-xml.js'

/**
 * Modification times a WebDAV client sets: the file's `provided_mtime`, shown as its
 * `getlastmodified` from then on. Two ways are understood: PROPPATCH of `DAV:getlastmodified`
 * (an HTTP date), and ownCloud's `X-OC-Mtime` header on a PUT (Unix seconds, maybe with a
 * fraction), which rclone's webdav backend sends with `vendor = owncloud` or `nextcloud`.
 */

/** Whether a PROPPATCH change is the one live property Wharf lets a client set. */
export const isSettableTime = (c: { ns: string; name: string; set: boolean }) =>
  c.set && c.ns === DAV_NS && c.name === 'getlastmodified'

/** The time a `DAV:set` of `DAV:getlastmodified` gives (epoch ms); not a date: 400, before anything changes. */
export function lastModifiedOf(prop: XmlElement): number {
  return parseTime(Date.parse(prop.text.trim()), 'getlastmodified must be an HTTP date')
}

/** The header ownCloud clients (and rclone) send with a PUT. */
export const OC_MTIME = 'x-oc-mtime'

/** The `X-OC-Mtime` of a PUT (epoch ms), or null without one; anything but seconds is 400. */
export function ocMtimeOf(request: FastifyRequest): number | null {
  const raw = request.headers[OC_MTIME]
  if (raw === undefined) return null
  const text = Array.isArray(raw) ? '' : raw.trim()
  const seconds = /^\d{1,12}(\.\d+)?$/.test(text) ? Number(text) : Number.NaN
  return parseTime(Math.floor(seconds * 1000), 'X-OC-Mtime must be Unix seconds')
}

function parseTime(ms: number, message: string): number {
  if (!Number.isFinite(ms) || ms < 0 || ms > 253_402_300_799_000) throw new DavError(400, message)
  return ms
}
