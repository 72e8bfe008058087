// Who is where: every place on the network, its namespace suffix and its address.
import type { NatKind } from './routers'

/** The IPv4-only homes behind NAT (what the benches lay hosts out in). */
export type HomeName = 'a' | 'b' | 'c'
/**
 * Every home: the NAT homes, home D, whose computers also have global IPv6 behind the router's firewall, and home E,
 * behind its ISP's carrier-grade NAT as well as its own router (a double NAT).
 */
export type AnyHomeName = HomeName | 'd' | 'e'
export type Computer = 'hostA' | 'peerA' | 'hostB' | 'hostC' | 'hostD' | 'hostE'
export type Router = 'routerA' | 'routerB' | 'routerC' | 'routerD' | 'routerE'
/** An ISP's carrier-grade NAT, between the internet and a home's router. */
export type Carrier = 'carrierE'
/**
 * Every namespace: the internet bridge (which also runs the STUN server), the cloud, the laptop, routers, a carrier NAT
 * and computers.
 */
export type Place = 'internet' | 'cloud' | 'laptop' | Router | Carrier | Computer

export interface HomePlan {
  readonly name: AnyHomeName
  readonly nat: NatKind
  readonly router: Router
  /**
   * What the cloud sees as a home computer's address: the router's own WAN address, or behind a carrier NAT the
   * carrier's.
   */
  readonly wan: string
  /** The router's port on the internet bridge (an interface in the internet namespace). */
  readonly uplink: string
  readonly lan: string
  readonly gateway: string
  readonly computers: ReadonlyArray<{ readonly place: Computer; readonly address: string; readonly address6?: string }>
  /** Whether the router runs miniupnpd (UPnP-IGD, NAT-PMP and PCP on the LAN; see upnp.ts). */
  readonly miniupnpd: boolean
  /**
   * IPv6 beside the NAT: the router routes a global /64 to its computers (no NAT for v6) and its firewall drops new
   * inbound v6 unless a pinhole is open (miniupnpd's IGDv2 WANIPv6FirewallControl or PCP MAP).
   */
  readonly ipv6?: { readonly wan: string; readonly lan: string; readonly gateway: string }
  /**
   * A carrier-grade NAT in front of the router (port-preserving, filtering as Linux conntrack does): the carrier holds
   * `wan` on the internet; the router's WAN is `routerWan` on the carrier's private `inside` network, so what the
   * router maps (UPnP, NAT-PMP) is mapped on the router alone.
   */
  readonly carrier?: {
    readonly place: Carrier
    readonly inside: string
    readonly gateway: string
    readonly routerWan: string
  }
}

// 198.18.0.0/15 is reserved for benchmarking (RFC 2544): it can never collide with a real address.
export const INTERNET_CIDR = '198.18.0.0/24'
export const PREFIX_LENGTH = 24
export const INTERNET_ADDRESSES = { internet: '198.18.0.1', cloud: '198.18.0.10', laptop: '198.18.0.20' } as const
// 2001:db8::/32 is the IPv6 documentation prefix (RFC 3849): never routed on the real internet.
export const INTERNET6_CIDR = '2001:db8::/64'
export const PREFIX6_LENGTH = 64
export const INTERNET6_ADDRESSES = { internet: '2001:db8::1', cloud: '2001:db8::10', laptop: '2001:db8::20' } as const

export const HOMES: Readonly<Record<AnyHomeName, HomePlan>> = {
  a: {
    name: 'a',
    nat: 'port-preserving',
    router: 'routerA',
    wan: '198.18.0.101',
    uplink: 'home-a',
    lan: '10.1.0.0/24',
    gateway: '10.1.0.1',
    computers: [
      { place: 'hostA', address: '10.1.0.10' },
      { place: 'peerA', address: '10.1.0.11' },
    ],
    miniupnpd: false,
  },
  b: {
    name: 'b',
    nat: 'port-randomising',
    router: 'routerB',
    wan: '198.18.0.102',
    uplink: 'home-b',
    lan: '10.2.0.0/24',
    gateway: '10.2.0.1',
    computers: [{ place: 'hostB', address: '10.2.0.10' }],
    miniupnpd: false,
  },
  c: {
    name: 'c',
    nat: 'upnp',
    router: 'routerC',
    wan: '198.18.0.103',
    uplink: 'home-c',
    lan: '10.3.0.0/24',
    gateway: '10.3.0.1',
    computers: [{ place: 'hostC', address: '10.3.0.10' }],
    miniupnpd: true,
  },
  d: {
    name: 'd',
    // v4 behind a randomising NAT that maps nothing (miniupnpd denies every v4 mapping): v6 is this home's way in
    nat: 'port-randomising',
    router: 'routerD',
    wan: '198.18.0.104',
    uplink: 'home-d',
    lan: '10.4.0.0/24',
    gateway: '10.4.0.1',
    computers: [{ place: 'hostD', address: '10.4.0.10', address6: '2001:db8:4::10' }],
    miniupnpd: true,
    ipv6: { wan: '2001:db8::104', lan: '2001:db8:4::/64', gateway: '2001:db8:4::1' },
  },
  e: {
    name: 'e',
    // its own router keeps ports and runs miniupnpd, which finds it sits behind the carrier's NAT (its STUN check)
    nat: 'upnp',
    router: 'routerE',
    wan: '198.18.0.105',
    uplink: 'home-e',
    lan: '10.5.0.0/24',
    gateway: '10.5.0.1',
    computers: [{ place: 'hostE', address: '10.5.0.10' }],
    miniupnpd: true,
    carrier: { place: 'carrierE', inside: '172.20.0.0/24', gateway: '172.20.0.1', routerWan: '172.20.0.2' },
  },
}

export const PLACES: readonly Place[] = [
  'internet',
  'cloud',
  'laptop',
  'routerA',
  'hostA',
  'peerA',
  'routerB',
  'hostB',
  'routerC',
  'hostC',
  'routerD',
  'hostD',
  'carrierE',
  'routerE',
  'hostE',
]

export function homeOf(computer: Computer): HomePlan {
  const home = Object.values(HOMES).find((h) => h.computers.some((c) => c.place === computer))
  if (home === undefined) throw new Error(`${computer} is in no home`)
  return home
}
