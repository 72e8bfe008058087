// Where bench:wan's and bench:wan-speculative's delay sits (`--layout`): in each, the client↔host leg is the named
// one-way delay d; they differ in the host↔host leg, which decides what forwarding gains (per token on 3 hops:
// client-relayed needs 6 client↔host legs, hop-to-hop 2 of them and 2 host↔host legs).
import type { HomeName, HomeNetwork, HomeNetworkOptions, Place } from '../test/network'
import { median } from './seeded-host'
import { roundTrips } from './wan-swarms'

const HOMES: readonly HomeName[] = ['a', 'b', 'c']
/** Hosts of one region, as placement would pick them: each home line's one-way delay in the far-client layout, ms. */
export const NEAR_MS = 2.5

/**
 * - homes: d on every home line, none on the laptop's: host↔host is 2d, and forwarding gains nothing (6d against 6d);
 * - every-leg: d/2 on every line, the laptop's too: every leg is d, as the issue pictures it (at most 6d/4d = 1.5×);
 * - far-client: the hosts in one region (NEAR_MS on each home line, host↔host 2·NEAR_MS), the client d from them.
 */
const LAYOUTS = {
  homes: (d: number) => ({ home: d, laptop: undefined }),
  'every-leg': (d: number) => ({ home: d / 2, laptop: d / 2 }),
  'far-client': (d: number) => ({ home: NEAR_MS, laptop: Math.max(0, d - NEAR_MS) }),
} as const
export type LayoutName = keyof typeof LAYOUTS

/** The layout `--layout` names; exits with the choices when it names none. */
export function layoutNamed(name: string, bench: string): LayoutName {
  if (name in LAYOUTS) return name as LayoutName
  console.error(`${bench} --layout must be one of ${Object.keys(LAYOUTS).join(', ')}; got ${name}`)
  process.exit(2)
}

/**
 * The network's links at the start, for client↔host delay `d`
 * (the laptop's line shaped only where the layout shapes it).
 */
export function layoutLinks(layout: LayoutName, d: number): NonNullable<HomeNetworkOptions['links']> {
  const { home, laptop } = LAYOUTS[layout](d)
  const line = { delayMs: home }
  return { a: line, b: line, c: line, ...(laptop === undefined ? {} : { laptop: { delayMs: laptop } }) }
}

/** Sets every shaped line for client↔host delay `d`. */
export async function setLayoutDelay(n: HomeNetwork, layout: LayoutName, d: number): Promise<void> {
  const { home, laptop } = LAYOUTS[layout](d)
  for (const h of HOMES) await n.setLink(h, { delayMs: home })
  if (laptop !== undefined) await n.setLink('laptop', { delayMs: laptop })
}

/** Each home's computer that hosts. */
export const COMPUTERS = { a: 'hostA', b: 'hostB', c: 'hostC' } as const

/** Hop i's home for a route of `hops`: A, B, C, A, … so that every seam crosses from one home to another. */
export function hopHomes(hops: number): HomeName[] {
  return Array.from({ length: hops }, (_, i) => HOMES[i % HOMES.length] as HomeName)
}

/**
 * A route's round trips at the delay set now, median ms: per hop, from the laptop and the cloud to its router; per
 * seam, from the hop's computer to the next hop's router.
 */
export interface RouteRoundTrips {
  readonly laptopToRouter: number[]
  readonly cloudToRouter: number[]
  readonly hostToRouter: number[]
  readonly laptopToCloud: number
}

/** Measures RouteRoundTrips for hops in `homes` (each pair of homes once). */
export async function routeRoundTrips(n: HomeNetwork, homes: readonly HomeName[]): Promise<RouteRoundTrips> {
  const medianTo = async (from: Place, address: string) => {
    const ms = await roundTrips(n, from, address)
    if (ms.some((m) => m < 0))
      throw new Error(`a round trip from ${from} to ${address} went unanswered: ${JSON.stringify(ms)}`)
    return median(ms)
  }
  const toHome = new Map<HomeName, { laptop: number; cloud: number }>()
  for (const home of HOMES)
    toHome.set(home, {
      laptop: await medianTo('laptop', n.homes[home].wan),
      cloud: await medianTo('cloud', n.homes[home].wan),
    })
  const seams = new Map<string, number>()
  for (const [i, from] of homes.slice(0, -1).entries()) {
    const to = homes[i + 1] as HomeName
    if (!seams.has(from + to)) seams.set(from + to, await medianTo(COMPUTERS[from], n.homes[to].wan))
  }
  return {
    laptopToRouter: homes.map((h) => toHome.get(h)?.laptop ?? 0),
    cloudToRouter: homes.map((h) => toHome.get(h)?.cloud ?? 0),
    hostToRouter: homes.slice(0, -1).map((h, i) => seams.get(h + homes[i + 1]) ?? 0),
    laptopToCloud: await medianTo('laptop', n.addresses.cloud),
  }
}

/** The one-way legs of a hop-to-hop token, ms: client→first hop, each seam, last hop→client, each half a round trip. */
export function hopToHopLegsMs(r: RouteRoundTrips): number {
  return ((r.laptopToRouter[0] ?? 0) + r.hostToRouter.reduce((s, x) => s + x, 0) + (r.laptopToRouter.at(-1) ?? 0)) / 2
}
