import net from 'node:net'
import ipaddr from 'ipaddr.js'
import { AddressRanges } from '../../api/address-ranges.js'
import { addModelError, type ModelErrors } from '../../api/errors.js'

/** Entries an `allowed_ips` list may hold (a list is for a few offices, not a block list). */
export const MAX_ALLOWED_IPS = 1000

/** One entry: an IPv4 or IPv6 address, or a CIDR range of either. */
function isEntry(s: string): boolean {
  if (net.isIP(s) !== 0) return true
  const slash = s.indexOf('/')
  if (slash < 0 || net.isIP(s.slice(0, slash)) === 0 || !/^[0-9]{1,3}$/.test(s.slice(slash + 1))) return false
  try {
    ipaddr.parseCIDR(s)
    return true
  } catch {
    return false
  }
}

function entries(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '')
}

/**
 * An `allowed_ips` value as stored: one entry a line, blank lines and spaces around entries
 * dropped; null (blank) for "any address". A bad entry is a model-save-error on `field`.
 */
export function checkAllowedIps(
  value: string | null | undefined,
  field: string,
  errors: ModelErrors,
): string | null {
  if (value === null || value === undefined) return null
  const list = entries(value)
  if (list.length === 0) return null
  const bad = list.filter((e) => !isEntry(e))
  if (bad.length) {
    addModelError(
      errors,
      field,
      `must hold IPv4 or IPv6 addresses or CIDR ranges, one a line: not ${bad
        .slice(0, 3)
        .map((b) => JSON.stringify(b.slice(0, 64)))
        .join(', ')}`,
    )
  } else if (list.length > MAX_ALLOWED_IPS) {
    addModelError(errors, field, `may hold at most ${MAX_ALLOWED_IPS} entries`)
  }
  return list.join('\n')
}

/** The ranges of a stored list (null or blank: null, any address). */
export function allowedRanges(stored: string | null): AddressRanges | null {
  if (stored === null) return null
  const list = entries(stored).filter(isEntry)
  if (list.length === 0) return null
  return new AddressRanges(list.map((e) => (e.includes('/') ? e : `${e}/${net.isIPv4(e) ? 32 : 128}`)))
}

/** Lists parsed, by their stored text: a list is read on every request of a key whose user has one. */
const parsedLists = new Map<string, AddressRanges | null>()
const MAX_PARSED_LISTS = 1000

/** Whether `ip` is inside a stored list (a list that is null or blank holds every address). */
export function ipAllowed(stored: string | null, ip: string): boolean {
  if (stored === null) return true
  let ranges = parsedLists.get(stored)
  if (ranges === undefined) {
    ranges = allowedRanges(stored)
    if (parsedLists.size >= MAX_PARSED_LISTS) parsedLists.clear()
    parsedLists.set(stored, ranges)
  }
  return ranges === null || ranges.has(ip)
}
