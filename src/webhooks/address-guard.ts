import ipaddr from 'ipaddr.js'
import { AddressRanges, parseAddress } from '../api/address-ranges.js'

/** Resolves a host name to every address it has (the shape of `dns.promises.lookup(host, { all: true })`). */
export type Resolver = (hostname: string) => Promise<{ address: string; family: 4 | 6 }[]>

/** IANA allocates global unicast IPv6 only from 2000::/3; anything outside it is not a listener on the internet. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number]

/**
 * Decides which addresses a webhook may be sent to, so that a listener URL cannot reach the
 * machine Wharf runs on, its private network or a cloud metadata service (SSRF).
 */
export class AddressGuard {
  readonly #allowed: AddressRanges

  /** `allowedCidrs` opens ranges that are not globally routable, e.g. `127.0.0.0/8` for a local listener. */
  constructor(allowedCidrs: string[]) {
    this.#allowed = new AddressRanges(allowedCidrs)
  }

  /** true when the address may be contacted: globally routable unicast, or inside an allowed CIDR. */
  allows(address: string): boolean {
    const parsed = parseAddress(address)
    if (parsed === null) return false
    if (this.#allowed.has(parsed)) return true
    if (parsed.range() !== 'unicast') return false
    // ipaddr.js calls the deprecated IPv4-compatible ::/96 block "unicast"; it is not routable.
    return parsed.kind() === 'ipv4' || parsed.match(GLOBAL_UNICAST_V6)
  }
}

/** A delivery was stopped because the listener's address is not one the guard allows. */
export class AddressRefusedError extends Error {
  constructor(readonly address: string) {
    super(`Address ${describeAddress(address)} is not allowed: ${WHY_REFUSED}`)
    this.name = 'AddressRefusedError'
  }
}

/** Why the guard refuses an address, in the words the settings and the delivery log both use. */
export const WHY_REFUSED = 'webhooks go only to public addresses and those in WEBHOOK_ALLOWED_CIDRS'

/**
 * The address with the kind of range it lies in (`127.0.0.2 (loopback)`, `fe80::1 (link local)`),
 * so that a refusal says why the address is not public.
 */
export function describeAddress(address: string): string {
  const parsed = parseAddress(address)
  if (parsed === null) return address
  const range = parsed.range()
  if (range === 'unicast') return address
  return `${address} (${range.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase()})`
}
