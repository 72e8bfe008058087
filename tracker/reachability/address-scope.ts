import { isIP } from 'node:net'

/**
 * How far an address reaches: this computer, one link (IPv6 link-local: meaningless without the host's interface),
 * one private network, the internet, or nowhere (multicast, unspecified and reserved IPv6).
 */
export type AddressScope = 'loopback' | 'link-local' | 'private' | 'public' | 'unroutable'

/** An address as Node's sockets report it, without the IPv4-mapped prefix (::ffff:198.18.1.1 is 198.18.1.1). */
export function plainAddress(address: string): string {
  const bare = address.replace(/^\[|\]$/g, '')
  return bare.startsWith('::ffff:') && isIP(bare.slice(7)) === 4 ? bare.slice(7) : bare
}

export function addressScope(address: string): AddressScope {
  const a = plainAddress(address).toLowerCase()
  if (a === 'localhost' || a === '::1' || a.startsWith('127.')) return 'loopback'
  if (/^(10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|169\.254\.|100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\.)/.test(a))
    return 'private'
  if (isIP(a.split('%')[0] ?? '') !== 6) return 'public'
  if (/^fe[89ab][0-9a-f]?:/.test(a)) return 'link-local'
  // unique local addresses (fc00::/7): a site's private network
  if (/^f[cd][0-9a-f]{0,2}:/.test(a)) return 'private'
  // global unicast is 2000::/3; the rest of IPv6 (multicast, ::, reserved) reaches no host on the internet
  return /^[23][0-9a-f]{0,3}:/.test(a) ? 'public' : 'unroutable'
}

const RANK: Record<AddressScope, number> = { public: 0, private: 1, 'link-local': 2, loopback: 3, unroutable: 4 }

/**
 * Whether the tracker may dial `candidate` for a host it sees at `observed`. A host on the internet offers the address
 * the tracker sees (its router's, where a mapped port lives) and its global IPv6 addresses (no NAT in front of those,
 * only a firewall its pinhole opens): the tracker dials no other address on anyone else's network for it. A host on
 * the tracker's own LAN or computer may offer its private and loopback addresses (IPv6 unique local ones too).
 * Link-local and unroutable addresses are never dialed.
 */
export function mayDial(candidate: string, observed: string): boolean {
  const scope = addressScope(candidate)
  const seen = addressScope(observed)
  if (scope === 'link-local' || scope === 'unroutable') return false
  if (scope === 'public')
    return (
      plainAddress(candidate) === plainAddress(observed) || (seen === 'public' && isIP(plainAddress(candidate)) === 6)
    )
  if (seen === 'public') return false
  return seen === 'loopback' || scope === 'private'
}

/** Candidates ordered as clients should be sent to them: public first, then the LAN, loopback last. */
export function byReach(a: string, b: string): number {
  return RANK[addressScope(a)] - RANK[addressScope(b)]
}
