// bench:wan's results: each delay's runs, per round, and the summary its last line prints (medians, limits, ratios).
import { median } from './seeded-host'

const round2 = (x: number) => Math.round(x * 100) / 100

export interface DelayResult {
  direct: number[]
  hopToHop: number[]
  /** The direct swarm with no forwarding asked: what an app's or the API's chat gets. */
  defaultMode: number[]
  relayed: number[]
  /** The relayed swarm's hosts reached by channels punched through their routers. */
  punched: number[]
  punchedBytesPerToken: number[]
  /** The relayed swarm punched, hop to hop: each host forwards to the next over a channel it punched itself. */
  punchedHopToHop: number[]
  punchedHopToHopBytesPerToken: number[]
  /** Of its seams, the fraction forwarded host to host (the rest carried by the client), per run. */
  punchedSeamsForwarded: number[]
  /** Its one-way legs hop to hop over homes A and C, ms. */
  legsPunchableMs: number[]
  volunteer: number[]
  /** The round trips a token needs, ms: each round's sum over the route. */
  roundTripsDirectMs: number[]
  roundTripsRelayedMs: number[]
  /** The one-way legs of a hop-to-hop token, ms: client→A, A→B, B→C, C→client. */
  legsHopToHopMs: number[]
  relayedBytesPerToken: number[]
  /** What the tracker relayed per token in the volunteer-relayed chats: 0 unless a hop fell back to it. */
  volunteerTrackerBytesPerToken: number[]
}

/** Each delay's runs, none yet. */
export function emptyResults(delaysMs: readonly number[]): Map<number, DelayResult> {
  return new Map<number, DelayResult>(
    delaysMs.map((d) => [
      d,
      {
        direct: [],
        hopToHop: [],
        defaultMode: [],
        relayed: [],
        punched: [],
        punchedBytesPerToken: [],
        punchedHopToHop: [],
        punchedHopToHopBytesPerToken: [],
        punchedSeamsForwarded: [],
        legsPunchableMs: [],
        volunteer: [],
        roundTripsDirectMs: [],
        roundTripsRelayedMs: [],
        legsHopToHopMs: [],
        relayedBytesPerToken: [],
        volunteerTrackerBytesPerToken: [],
      },
    ]),
  )
}

/** The last line's figures, per delay: medians, the limit of the medians, their ratios, the relays' bytes. */
export function summarise(
  results: ReadonlyMap<number, DelayResult>,
  computeMs: readonly number[],
): Record<string, number> {
  const summary: Record<string, number> = {}
  for (const [delayMs, r] of results) {
    // the limit of the medians: one round's compute slowed by a
    // neighbour's burst moves it less than a median of per-round limits
    const [d, rl, v, h] = [median(r.direct), median(r.relayed), median(r.volunteer), median(r.hopToHop)]
    const lh = 1000 / (median(computeMs) + median(r.legsHopToHopMs))
    const lp = 1000 / (median(computeMs) + median(r.legsPunchableMs))
    const [tripsDirect, tripsRelayed] = [median(r.roundTripsDirectMs), median(r.roundTripsRelayedMs)]
    const [ld, lr] = [1000 / (median(computeMs) + tripsDirect), 1000 / (median(computeMs) + tripsRelayed)]
    Object.assign(summary, {
      [`round_trips_direct_ms_${delayMs}ms`]: round2(tripsDirect),
      [`round_trips_relayed_ms_${delayMs}ms`]: round2(tripsRelayed),
      [`direct_tokens_per_s_${delayMs}ms`]: round2(d),
      [`relayed_tokens_per_s_${delayMs}ms`]: round2(rl),
      [`limit_direct_tokens_per_s_${delayMs}ms`]: round2(ld),
      [`limit_relayed_tokens_per_s_${delayMs}ms`]: round2(lr),
      [`direct_over_limit_${delayMs}ms`]: round2(d / ld),
      [`relayed_over_limit_${delayMs}ms`]: round2(rl / lr),
      [`relayed_over_direct_${delayMs}ms`]: round2(rl / d),
      [`legs_hop_to_hop_ms_${delayMs}ms`]: round2(median(r.legsHopToHopMs)),
      [`hop_to_hop_tokens_per_s_${delayMs}ms`]: round2(h),
      [`limit_hop_to_hop_tokens_per_s_${delayMs}ms`]: round2(lh),
      [`hop_to_hop_over_limit_${delayMs}ms`]: round2(h / lh),
      // the direct swarm both ways: what forwarding gains over the client carrying every hidden state
      [`hop_to_hop_over_client_relayed_${delayMs}ms`]: round2(h / d),
      // no forwarding asked (the planner's 'auto'), as the app and the API chat
      [`default_mode_tokens_per_s_${delayMs}ms`]: round2(median(r.defaultMode)),
      [`default_mode_over_client_relayed_${delayMs}ms`]: round2(median(r.defaultMode) / d),
      [`relayed_bytes_per_token_${delayMs}ms`]: Math.round(median(r.relayedBytesPerToken)),
      // the relayed swarm's hosts over channels punched through their routers: the direct path's limit
      [`punched_tokens_per_s_${delayMs}ms`]: round2(median(r.punched)),
      [`punched_over_limit_${delayMs}ms`]: round2(median(r.punched) / ld),
      [`punched_over_direct_${delayMs}ms`]: round2(median(r.punched) / d),
      [`punched_relayed_bytes_per_token_${delayMs}ms`]: Math.round(median(r.punchedBytesPerToken)),
      // and hop to hop, each host punching its own channel to the next: the hop-to-hop limit
      [`punched_hop_to_hop_tokens_per_s_${delayMs}ms`]: round2(median(r.punchedHopToHop)),
      [`limit_punched_hop_to_hop_tokens_per_s_${delayMs}ms`]: round2(lp),
      [`punched_hop_to_hop_over_limit_${delayMs}ms`]: round2(median(r.punchedHopToHop) / lp),
      [`punched_hop_to_hop_relayed_bytes_per_token_${delayMs}ms`]: Math.round(median(r.punchedHopToHopBytesPerToken)),
      [`punched_seams_forwarded_${delayMs}ms`]: round2(median(r.punchedSeamsForwarded)),
      // the volunteer is in the cloud as the tracker is: the same round trips, the same limit
      [`volunteer_relayed_tokens_per_s_${delayMs}ms`]: round2(v),
      [`volunteer_relayed_over_limit_${delayMs}ms`]: round2(v / lr),
      [`volunteer_relayed_over_direct_${delayMs}ms`]: round2(v / d),
      [`volunteer_tracker_relayed_bytes_per_token_${delayMs}ms`]: Math.round(median(r.volunteerTrackerBytesPerToken)),
    })
  }
  return summary
}
