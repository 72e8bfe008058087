// Who is where: every place on the network, its namespace suffix and its address.
import type { NatKind } from './routers'

export type HomeName = 'a' | 'b' | 'c'
export type Computer = 'hostA' | 'peerA' | 'hostB' | 'hostC'
export type Router = 'routerA' | 'routerB' | 'routerC'
/**
 * Every namespace: the internet bridge (which also runs the STUN server), the cloud, the laptop, routers and computers.
 */
export type Place = 'internet' | 'cloud' | 'laptop' | Router | Computer

export interface HomePlan {
  readonly name: HomeName
  readonly nat: NatKind
  readonly router: Router
  /** The router's address on the internet: what the cloud sees as a home computer's address. */
  readonly wan: string
  /** The router's port on the internet bridge (an interface in the internet namespace). */
  readonly uplink: string
  readonly lan: string
  readonly gateway: string
  readonly computers: ReadonlyArray<{ readonly place: Computer; readonly address: string }>
}

// 198.18.0.0/15 is reserved for benchmarking (RFC 2544): it can never collide with a real address.
export const INTERNET_CIDR = '198.18.0.0/24'
export const PREFIX_LENGTH = 24
export const INTERNET_ADDRESSES = { internet: '198.18.0.1', cloud: '198.18.0.10', laptop: '198.18.0.20' } as const

export const HOMES: Readonly<Record<HomeName, HomePlan>> = {
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
]

export function homeOf(computer: Computer): HomePlan {
  const home = Object.values(HOMES).find((h) => h.computers.some((c) => c.place === computer))
  if (home === undefined) throw new Error(`${computer} is in no home`)
  return home
}
