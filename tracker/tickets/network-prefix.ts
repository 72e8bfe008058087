import { isIP } from 'node:net'
import { plainAddress } from '../reachability/address-scope'

/**
 * The network a client's address belongs to, as far as grants count: its IPv4 /24 or its IPv6 /48 (one site's
 * allocation), so a farmer cycling addresses inside its own network still counts as one. Loopback is a prefix too.
 */
export function networkPrefix(address: string): string {
  const plain = plainAddress(address)
  if (isIP(plain) === 4) return `${plain.split('.').slice(0, 3).join('.')}.0/24`
  if (isIP(plain) === 6) return `${expandIpv6(plain).slice(0, 3).join(':')}::/48`
  // Not an address (a test's stand-in): it counts as itself.
  return plain
}

/** The eight 16-bit groups of an IPv6 address, in lower-case hex without leading zeros. */
function expandIpv6(address: string): string[] {
  const bare = address.toLowerCase().split('%')[0] ?? ''
  const [head = '', tail] = bare.split('::')
  const groups = (part: string) => (part === '' ? [] : part.split(':'))
  const [front, back] = [groups(head), tail === undefined ? [] : groups(tail)]
  const missing = 8 - front.length - back.length
  return [...front, ...Array<string>(Math.max(0, missing)).fill('0'), ...back].map((g) =>
    g.includes('.') ? g : Number.parseInt(g, 16).toString(16),
  )
}
