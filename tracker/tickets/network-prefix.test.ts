import { describe, expect, it } from 'vitest'
import { networkPrefix } from './network-prefix'

describe('networkPrefix', () => {
  it('counts IPv4 by /24 (mapped or not), IPv6 by /48, loopback as a prefix of its own', () => {
    expect(networkPrefix('203.0.113.7')).toBe('203.0.113.0/24')
    expect(networkPrefix('::ffff:203.0.113.200')).toBe('203.0.113.0/24')
    expect(networkPrefix('2001:db8:abcd:12::1')).toBe('2001:db8:abcd::/48')
    expect(networkPrefix('2001:0DB8:ABCD:0099:ffff::2')).toBe('2001:db8:abcd::/48')
    expect(networkPrefix('2001:db8::1')).toBe('2001:db8:0::/48')
    expect(networkPrefix('127.0.0.1')).toBe('127.0.0.0/24')
    expect(networkPrefix('::1')).toBe('0:0:0::/48')
  })
})
