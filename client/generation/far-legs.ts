// Which seams 'auto' forwards: those far from the client, judged by the client's pings to the hops, before the
// prompt's step.

import { isLoopbackHost } from '../../protocol'
import type { HopState } from '../open-hops'

/** The client's median ping to a hop from which forwarding its seams pays (on a LAN the client carries them), ms. */
export const FORWARD_FROM_RTT_MS = 5

/** The longest 'auto' waits for the pings sent after the opens before the first step, ms. */
const SECOND_PING_WAIT_MS = 1000

/** Waits for `pending` to settle (they never reject), or `ms`, whichever is first. */
async function settledWithin(pending: readonly (Promise<void> | undefined)[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms)
  })
  await Promise.race([Promise.all(pending), late])
  clearTimeout(timer)
}

/**
 * Of the seams that may be forwarded, those whose two hops are both far from the client (fastest ping at least
 * FORWARD_FROM_RTT_MS): there a step saves the client's round trip to each, and with latencies that keep the triangle
 * inequality a host-to-host leg is never longer than the two through the client. The fastest, not the median: a ping
 * slowed by a busy machine (the host opening the session as it answered) says nothing of the distance, and a host
 * 40 ms away never answers in 5.
 */
export function farLegs(hops: readonly HopState[], direct: readonly boolean[]): boolean[] {
  const far = hops.map((h) => {
    const pings = h.link.roundTripsMs ?? []
    return !onLoopback(h) && pings.length > 0 && Math.min(...pings) >= FORWARD_FROM_RTT_MS
  })
  return direct.map((d, i) => d && far[i] === true && far[i + 1] === true)
}

/**
 * Whether a hop listens on this machine's loopback (a swarm on one computer, a test's): near, whatever a ping that met
 * a busy moment says (on a loaded machine an in-process swarm's pings took over 5 ms, and a forwarded seam's receipt
 * then came a step late).
 */
function onLoopback(h: HopState): boolean {
  const endpoint = h.hop?.endpoint
  if (endpoint === undefined || endpoint === null) return false
  try {
    return isLoopbackHost(new URL(endpoint).hostname)
  } catch {
    return false
  }
}

/**
 * farLegs once the pings sent after the opens are in, where they matter. A near hop is near by its first ping already
 * (the fastest counts); one that looks far may have been busy connecting or opening as it answered, so its ping after
 * the open has the last word: awaited, at most twice the slowest first ping (it left as the open's answer came in).
 * Undefined while one is still out (a host busy still, a lost pong): not decided yet.
 */
export async function farLegsSettled(
  hops: readonly HopState[],
  direct: readonly boolean[],
): Promise<boolean[] | undefined> {
  const legs = farLegs(hops, direct)
  if (!legs.some(Boolean)) return legs
  const firsts = hops.flatMap((h) => h.link.roundTripsMs?.slice(0, 1) ?? [])
  const settled = new Set<HopState>()
  const pinging = hops.filter((h) => h.pinged !== undefined)
  await settledWithin(
    pinging.map((h) => h.pinged?.then(() => void settled.add(h))),
    Math.min(2 * Math.max(...firsts), SECOND_PING_WAIT_MS),
  )
  return settled.size === pinging.length ? farLegs(hops, direct) : undefined
}
