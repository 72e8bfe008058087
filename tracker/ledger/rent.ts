import { type Manifest, rangeCacheBytes } from '../../protocol'
import { consumerAccount } from './account-names'
import type { StoredHold } from './credit-holds'
import { Ledger } from './ledger'
import type { LedgerStore } from './ledger-store'
import type { PricingOptions } from './pricing'

/**
 * Micro-credits one GB of KV cache costs its holder per minute, by default (about a completion token of a 10 GB model).
 */
export const RENT_MICRO_PER_GB_MINUTE = 1_000
/** Minutes of rent a plan's credit hold covers beside its tokens: the host's idle timeout for a stepped session. */
export const RENT_MINUTES_HELD = 10

/**
 * What holding one hop's session costs per minute, micro-credits: the cache its max tokens reserve on the hop's
 * blocks (protocol/cache-cost.ts), at the swarm's rent; at least 1, so no session holds a slot for free.
 */
export function rentPerMinute(
  manifest: Pick<Manifest, 'nLayer' | 'kvBytesPerTokenPerBlock' | 'cachePerBlock'>,
  blocks: readonly [number, number],
  maxTokens: number,
  pricing: PricingOptions,
): number {
  const bytes = rangeCacheBytes(manifest, blocks, { tokens: maxTokens, sessions: 1 })
  return Math.max(1, Math.ceil((bytes * (pricing.rentMicroPerGbMinute ?? RENT_MICRO_PER_GB_MINUTE)) / 1e9))
}

/** The hops holding the session's cache now: of the hops routed (failovers add up), the last to cover each block. */
export function holdingHops<H extends { readonly hostId: string; readonly blocks: readonly [number, number] }>(
  hops: readonly H[],
): H[] {
  const covered = new Set<number>()
  const holding: H[] = []
  for (const hop of [...hops].reverse()) {
    let fresh = false
    for (let b = hop.blocks[0]; b < hop.blocks[1]; b++) {
      if (covered.has(b)) continue
      covered.add(b)
      fresh = true
    }
    if (fresh) holding.push(hop)
  }
  return holding.reverse()
}

/**
 * Rent for a routed session, charged once when its hold ends (session.end, or the hold idling out): each hop's rent
 * per minute for every minute started from the plan to `until`, paid to the hop's host (less the swarm's fee) from
 * the consumer's balance, never below zero. Idempotent per session, like a receipt per step.
 */
export class Rent {
  private readonly ledger: Ledger

  constructor(
    store: LedgerStore,
    /** The hops the tracker issued for a session and its model; undefined for a session it never routed. */
    private readonly routeOf: (session: string) => Promise<
      | {
          modelId: string
          hops: readonly { hostId: string; blocks: readonly [number, number] }[]
          /** The node that asked for the route: its own hosts hold its cache for free (local use). */
          issuedTo?: string | null
        }
      | undefined
    >,
    private readonly manifestOf: (
      modelId: string,
    ) => Pick<Manifest, 'nLayer' | 'kvBytesPerTokenPerBlock' | 'cachePerBlock'>,
    private readonly pricing: PricingOptions,
    /** Told of each host's rent once it is posted: the dashboards push it as they push a receipt. */
    private readonly paid: (
      session: string,
      hostId: string,
      accountId: string,
      modelId: string,
      charged: number,
    ) => void = () => {},
  ) {
    this.ledger = new Ledger(store, pricing.feeBps)
  }

  /**
   * Charges the session's rent up to `until`; returns the micro-credits charged (0 when already charged or unroutable).
   */
  async charge(hold: StoredHold, until: number): Promise<number> {
    const route = await this.routeOf(hold.session)
    if (route === undefined) return 0
    let manifest: ReturnType<typeof this.manifestOf>
    try {
      manifest = this.manifestOf(route.modelId)
    } catch {
      return 0
    }
    const minutes = Math.max(1, Math.ceil((until - hold.createdAt) / 60_000))
    const rents: [string, number][] = []
    const charged = await this.ledger.atomically(async (ledger) => {
      let left = Math.max(0, await ledger.store.balance(consumerAccount(hold.accountId)))
      let total = 0
      const owedPerHost: [string, number][] = []
      for (const hop of holdingHops(route.hops)) {
        const local = route.issuedTo != null && route.issuedTo === hop.hostId
        const perMinute = local ? 0 : rentPerMinute(manifest, hop.blocks, hold.maxTokens, this.pricing)
        const owed = Math.min(left, minutes * perMinute)
        left -= owed
        total += owed
        owedPerHost.push([hop.hostId, owed])
        rents.push([hop.hostId, owed])
      }
      const posted = await ledger.rent(
        { session: hold.session, modelId: route.modelId, accountId: hold.accountId, owed: owedPerHost },
        until,
      )
      return posted.posted ? total : 0
    })
    if (charged > 0)
      for (const [hostId, owed] of rents)
        if (owed > 0) this.paid(hold.session, hostId, hold.accountId, route.modelId, owed)
    return charged
  }
}
