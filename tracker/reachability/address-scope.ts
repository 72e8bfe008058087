import { isIP } from 'node:net'

/** How far an address reaches: this computer, one private network, or the internet. */
export type AddressScope = 'loopback' | 'private' | 'public'

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
  if (/^f[cd]|^fe[89ab]/.test(a)) return 'private'
  return 'public'
}

const RANK: Record<AddressScope, number> = { public: 0, private: 1, loopback: 2 }

/**
 * Whether the tracker may dial `candidate` for a host it sees at `observed`. A host on the internet offers only the
 * address the tracker sees (its router's, where a mapped port lives): the tracker dials no address on anyone else's
 * network for it. A host on the tracker's own LAN or computer may offer its private and loopback addresses.
 */
export function mayDial(candidate: string, observed: string): boolean {
  const scope = addressScope(candidate)
  const seen = addressScope(observed)
  if (scope === 'public') return plainAddress(candidate) === plainAddress(observed)
  if (seen === 'public') return false
  return seen === 'loopback' || scope === 'private'
}

/** Candidates ordered as clients should be sent to them: public first, then the LAN, loopback last. */
export function byReach(a: string, b: string): number {
  return RANK[addressScope(a)] - RANK[addressScope(b)]
}
