import net from 'node:net'
import ipaddr from 'ipaddr.js'

export type Address = ipaddr.IPv4 | ipaddr.IPv6
type Cidr = [Address, number]

/**
 * An address in the canonical textual forms the operating system would connect to (net.isIP), so
 * a check never judges a string differently from the socket that uses it; IPv4-mapped IPv6 is the
 * IPv4 address it reaches. Null for anything else.
 */
export function parseAddress(address: string): Address | null {
  if (net.isIP(address) === 0) return null
  try {
    return ipaddr.process(address)
  } catch {
    return null
  }
}

/**
 * A list of address ranges (CIDR text, as the settings that name them validate it), asked whether
 * it holds an address. `::ffff:10.0.0.0/104` means the same addresses as `10.0.0.0/8` and is
 * compared as such, since the addresses asked about are IPv4 there.
 */
export class AddressRanges {
  readonly #ranges: Cidr[]

  constructor(cidrs: string[]) {
    this.#ranges = cidrs.map((c) => normaliseCidr(ipaddr.parseCIDR(c)))
  }

  get size(): number {
    return this.#ranges.length
  }

  /** Whether the address (text, or parsed with parseAddress) lies in one of the ranges. */
  has(address: string | Address): boolean {
    const parsed = typeof address === 'string' ? parseAddress(address) : address
    if (parsed === null) return false
    return this.#ranges.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits))
  }
}

function normaliseCidr([range, bits]: Cidr): Cidr {
  if (range.kind() === 'ipv6' && (range as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96)
    return [(range as ipaddr.IPv6).toIPv4Address(), bits - 96]
  return [range, bits]
}
