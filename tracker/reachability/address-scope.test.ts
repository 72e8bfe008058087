// Which candidate addresses the tracker dials back, IPv6 beside IPv4 (issue 39): global v6 from a tracker on the
// internet, unique local v6 only from the same private network, link-local and unroutable v6 never.
import { describe, expect, it } from 'vitest'
import { addressScope, byReach, mayDial } from './address-scope'

describe('address scope over IPv6', () => {
  it('names global unicast public, unique local private, link-local and the rest of IPv6 apart', () => {
    expect(addressScope('2001:db8:4::10')).toBe('public')
    expect(addressScope('[2a01:4f8::1]')).toBe('public')
    expect(addressScope('3fff::1')).toBe('public')
    expect(addressScope('fd12:3456::10')).toBe('private')
    expect(addressScope('fc00::1')).toBe('private')
    expect(addressScope('fe80::1')).toBe('link-local')
    expect(addressScope('fe80::1%eth0')).toBe('link-local')
    expect(addressScope('febf::1')).toBe('link-local')
    expect(addressScope('::1')).toBe('loopback')
    for (const nowhere of ['::', 'ff02::1', 'ff05::2', '100::1', '64:ff9b::1'])
      expect(addressScope(nowhere)).toBe('unroutable')
    // IPv4 is as it was
    expect(addressScope('::ffff:10.1.0.10')).toBe('private')
    expect(addressScope('198.18.0.104')).toBe('public')
  })

  it('dials a global IPv6 candidate for a host seen on the internet, over v4 or v6, as it dials its v4 address', () => {
    // a host in a dual-stack home, connected to the tracker over IPv4 through its NAT
    expect(mayDial('[2001:db8:4::10]', '198.18.0.104')).toBe(true)
    expect(mayDial('2001:db8:4::10', '::ffff:198.18.0.104')).toBe(true)
    // connected over IPv6
    expect(mayDial('2001:db8:4::10', '2001:db8:4::10')).toBe(true)
    expect(mayDial('2001:db8:4::11', '2001:db8:4::10')).toBe(true)
    // a public IPv4 candidate other than the address seen is still refused
    expect(mayDial('198.18.0.105', '198.18.0.104')).toBe(false)
  })

  it('never dials link-local or unroutable IPv6, from anywhere', () => {
    for (const seen of ['198.18.0.104', '192.168.1.9', '127.0.0.1', 'fe80::2', '2001:db8::5'])
      for (const candidate of ['fe80::1', '[fe80::1%eth0]', 'ff02::1', '::', '[::]'])
        expect(mayDial(candidate, seen), `${candidate} for a host seen at ${seen}`).toBe(false)
  })

  it('dials a unique local IPv6 address only for a host on the tracker’s own private network or computer', () => {
    expect(mayDial('fd00:4::10', '198.18.0.104')).toBe(false)
    expect(mayDial('fd00:4::10', '2001:db8:4::10')).toBe(false)
    expect(mayDial('fd00:4::10', '192.168.1.9')).toBe(true)
    expect(mayDial('fd00:4::10', 'fd00:4::11')).toBe(true)
    expect(mayDial('fd00:4::10', '::1')).toBe(true)
  })

  it('dials no global IPv6 address of a host on the tracker’s LAN or computer (the tracker is not global)', () => {
    expect(mayDial('2001:db8:4::10', '192.168.1.9')).toBe(false)
    expect(mayDial('2001:db8:4::10', '127.0.0.1')).toBe(false)
  })

  it('orders candidates public first, link-local and unroutable last', () => {
    const sorted = ['::1', 'fe80::1', '10.0.0.2', '2001:db8::1', 'ff02::1', 'fd00::1'].sort(byReach)
    expect(sorted).toEqual(['2001:db8::1', '10.0.0.2', 'fd00::1', 'fe80::1', '::1', 'ff02::1'])
  })
})
