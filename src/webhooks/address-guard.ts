import net from 'node:net'
import ipaddr from 'ipaddr.js'

/** Resolves a host name to every address it has (the shape of `dns.promises.lookup(host, { all: true })`). */
export type Resolver = (hostname: string) => Promise<{ address: string; family: 4 | 6 }[]>

type Address = ipaddr.IPv4 | ipaddr.IPv6
type Cidr = [Address, number]

/** IANA allocates global unicast IPv6 only from 2000::/3; anything outside it is not a listener on the internet. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number]

/**
 * Decides which addresses a webhook may be sent to, so that a listener URL cannot reach the
 * machine Wharf runs on, its private network or a cloud metadata service (SSRF).
 */
export class AddressGuard {
  readonly #allowed: Cidr[]

  /** `allowedCidrs` opens ranges that are not globally routable, e.g. `127.0.0.0/8` for a local listener. */
  constructor(allowedCidrs: string[]) {
    this.#allowed = allowedCidrs.map((c) => normaliseCidr(ipaddr.parseCIDR(c)))
  }

  /** true when the address may be contacted: globally routable unicast, or inside an allowed CIDR. */
  allows(address: string): boolean {
    const parsed = parseAddress(address)
    if (parsed === null) return false
    if (this.#allowed.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits)))
      return true
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

/**
 * Only the canonical textual forms the operating system would connect to (net.isIP), so the guard
 * never judges a string differently from the socket that uses it. IPv4-mapped IPv6 is judged as
 * the IPv4 address it reaches.
 */
function parseAddress(address: string): Address | null {
  if (net.isIP(address) === 0) return null
  try {
    return ipaddr.process(address)
  } catch {
    return null
  }
}

/** `::ffff:10.0.0.0/104` means the same addresses as `10.0.0.0/8`, which is how they are compared. */
function normaliseCidr([range, bits]: Cidr): Cidr {
  if (range.kind() === 'ipv6' && (range as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96)
    return [(range as ipaddr.IPv6).toIPv4Address(), bits - 96]
  return [range, bits]
}
