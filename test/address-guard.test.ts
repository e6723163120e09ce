import { describe, expect, it } from 'vitest'
import { AddressRanges } from '../src/api/address-ranges.js'
import { loadConfig } from '../src/config.js'
import { LoginDefender } from '../src/modules/login-defender/login-defender.js'
import { AddressGuard, AddressRefusedError, describeAddress } from '../src/webhooks/address-guard.js'

/** Pure decisions: nothing here opens a socket. */
describe('AddressGuard', () => {
  const strict = new AddressGuard([])

  it.each([
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'cloud metadata (link-local)'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['127.0.0.1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'this network'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['198.18.0.1', 'benchmarking'],
    ['::1', 'IPv6 loopback'],
    ['::', 'IPv6 unspecified'],
    ['fe80::1', 'IPv6 link-local'],
    ['fe80::1%lo', 'IPv6 link-local with a zone'],
    ['fc00::1', 'IPv6 unique local'],
    ['fd00:ec2::254', 'cloud metadata over IPv6 (unique local)'],
    ['ff02::1', 'IPv6 multicast'],
    ['::ffff:127.0.0.1', 'loopback, IPv4-mapped'],
    ['::ffff:10.0.0.1', 'private, IPv4-mapped'],
    ['::7f00:1', 'IPv4-compatible (deprecated) form of 127.0.0.1'],
    ['64:ff9b::a00:1', 'NAT64 of a private address'],
    ['2002:a00:1::1', '6to4'],
    ['2001:db8::1', 'documentation'],
  ])('refuses %s (%s)', (address) => {
    expect(strict.allows(address)).toBe(false)
  })

  it.each(['8.8.8.8', '1.1.1.1', '2001:4860:4860::8888', '2606:4700:4700::1111', '::ffff:8.8.8.8'])(
    'allows the globally routable %s',
    (address) => {
      expect(strict.allows(address)).toBe(true)
    },
  )

  it.each([
    '',
    'localhost',
    'example.com',
    '127.1',
    '0177.0.0.1',
    '0x7f.0.0.1',
    '2130706433',
    '1.2.3.4/32',
    '[::1]',
  ])('refuses %j, which is not a plain IP address', (address) => {
    expect(strict.allows(address)).toBe(false)
  })

  it('opens exactly the allowed ranges, in either notation of IPv4', () => {
    const guard = new AddressGuard(['127.0.0.0/8', '10.1.0.0/16', 'fd12:3456::/32', '::ffff:192.168.0.0/112'])
    expect(guard.allows('127.0.0.2')).toBe(true)
    expect(guard.allows('::ffff:127.0.0.2')).toBe(true)
    expect(guard.allows('10.1.2.3')).toBe(true)
    expect(guard.allows('10.2.0.1')).toBe(false)
    expect(guard.allows('fd12:3456::1')).toBe(true)
    expect(guard.allows('fd12:3457::1')).toBe(false)
    expect(guard.allows('192.168.7.7')).toBe(true)
    expect(guard.allows('::ffff:192.168.7.7')).toBe(true)
    expect(guard.allows('172.16.0.1')).toBe(false)
    expect(guard.allows('::1')).toBe(false)
    expect(guard.allows('8.8.8.8')).toBe(true)
  })

  it('allows a single address with a /32', () => {
    const guard = new AddressGuard(['127.0.0.1/32'])
    expect(guard.allows('127.0.0.1')).toBe(true)
    expect(guard.allows('127.0.0.2')).toBe(false)
  })

  it('rejects a malformed range when built', () => {
    expect(() => new AddressGuard(['127.0.0.0/33'])).toThrow()
    expect(() => new AddressGuard(['localhost/8'])).toThrow()
  })
})

describe('AddressRefusedError', () => {
  it('names the refused address', () => {
    const err = new AddressRefusedError('10.0.0.1')
    expect(err).toBeInstanceOf(Error)
    expect(err.address).toBe('10.0.0.1')
    expect(err.message).toBe(
      'Address 10.0.0.1 (private) is not allowed: webhooks go only to public addresses and those in WEBHOOK_ALLOWED_CIDRS',
    )
  })

  it('says which kind of range a refused address lies in', () => {
    expect(describeAddress('169.254.169.254')).toBe('169.254.169.254 (link local)')
    expect(describeAddress('fe80::1')).toBe('fe80::1 (link local)')
    expect(describeAddress('::ffff:10.0.0.1')).toBe('::ffff:10.0.0.1 (private)')
    expect(describeAddress('100.64.0.1')).toBe('100.64.0.1 (carrier grade nat)')
    expect(describeAddress('0.0.0.0')).toBe('0.0.0.0 (unspecified)')
    expect(describeAddress('1.1.1.1')).toBe('1.1.1.1')
  })
})

describe('AddressRanges', () => {
  it('takes an IPv4-mapped IPv6 range as the IPv4 range it means, for either notation of an address', () => {
    const ranges = new AddressRanges(['::ffff:198.51.100.0/120', '2001:db8::/32'])
    expect(ranges.has('198.51.100.7')).toBe(true)
    expect(ranges.has('::ffff:198.51.100.7')).toBe(true)
    expect(ranges.has('198.51.101.7')).toBe(false)
    expect(ranges.has('2001:DB8::1')).toBe(true)
    expect(ranges.has('not an address')).toBe(false)
  })
})

describe('The login defender’s safe list', () => {
  it('holds an address inside an IPv4-mapped range of LOGIN_DEFENDER_SAFE_LIST', () => {
    const { loginDefender } = loadConfig({ LOGIN_DEFENDER_SAFE_LIST: '::ffff:127.0.0.0/120' })
    const defender = new LoginDefender(null as never, loginDefender, null as never)
    expect(defender.isSafe('127.0.0.2')).toBe(true)
    expect(defender.isSafe('127.0.1.2')).toBe(false)
  })
})
