import { describe, expect, it } from 'vitest'
import type { HopState } from '../open-hops'
import { FORWARD_FROM_RTT_MS, farLegs, farLegsSettled } from './far-legs'

/** A hop as farLegs reads it: its link's measured pings alone (no socket: the function reads nothing else). */
function hop(pings: number[]): HopState {
  return { link: { roundTripsMs: pings } } as unknown as HopState
}

/** A hop whose ping after the open comes back `ms` later with `rtt` (a stand-in for the link's measure()). */
function pinging(first: number, rtt: number, ms: number): HopState {
  const pings = [first]
  const pinged = new Promise<void>((resolve) => setTimeout(() => resolve(void pings.push(rtt)), ms).unref())
  return { link: { roundTripsMs: pings }, pinged } as unknown as HopState
}

describe('auto forwarding turns on the seams far from the client (pure: hops stand in with their pings only)', () => {
  it('forwards a seam only when both of its hops are direct and far from the client', () => {
    const far = FORWARD_FROM_RTT_MS * 8
    // the far-client layout: every hop 40 ms away, every seam direct
    expect(farLegs([hop([far]), hop([far, far + 1]), hop([far])], [true, true])).toEqual([true, true])
    // a LAN: every hop under a millisecond away
    expect(farLegs([hop([0.4]), hop([0.6]), hop([0.5])], [true, true])).toEqual([false, false])
    // a near middle hop: neither of its seams saves a round trip worth a host-to-host leg
    expect(farLegs([hop([far]), hop([1]), hop([far])], [true, true])).toEqual([false, false])
    // a seam that is not direct (a relayed hop) stays with the client however far
    expect(farLegs([hop([far]), hop([far]), hop([far])], [true, false])).toEqual([true, false])
    // no ping measured yet: not far
    expect(farLegs([hop([]), hop([far])], [true])).toEqual([false])
    // a hop on this machine's loopback is near, however slow a ping that met a busy moment
    const local = (endpoint: string) => ({ ...hop([far]), hop: { endpoint } }) as unknown as HopState
    expect(farLegs([local('wss://127.0.0.1:7001'), local('ws://[::1]:7002')], [true])).toEqual([false])
    expect(farLegs([local('wss://198.18.0.5:7001'), local('wss://198.18.0.6:7002')], [true])).toEqual([true])
    // the fastest ping decides: a slow ping beside a fast one (a busy host, not a far one) is not far
    expect(farLegs([hop([1, 1, far]), hop([far])], [true])).toEqual([false])
    expect(farLegs([hop([far, 1]), hop([far])], [true])).toEqual([false])
  })

  it('decides before the prompt: a far first ping waits for the ping after the open, a near one does not', async () => {
    const far = FORWARD_FROM_RTT_MS * 8
    // the first ping met the middle host busy opening; its second says it is on the LAN: nothing forwarded
    expect(await farLegsSettled([hop([far]), pinging(far, 1, 20), hop([far])], [true, true])).toEqual([false, false])
    // far by both pings: forwarded from the prompt on
    expect(await farLegsSettled([pinging(far, far, 10), pinging(far, far + 2, 30)], [true])).toEqual([true])
    // near by its first ping: decided at once, the second not awaited
    const near = pinging(1, 1, 60_000)
    expect(await farLegsSettled([near, hop([far])], [true])).toEqual([false])
    expect(near.link.roundTripsMs).toEqual([1])
    // a second ping that has not come back after twice the first (a host busy still, a lost pong): not decided yet
    const lost = pinging(far, 1, 60_000)
    expect(await farLegsSettled([lost, hop([far])], [true])).toBeUndefined()
    expect(lost.link.roundTripsMs).toEqual([far])
  })
})
