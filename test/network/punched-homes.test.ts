// Issue 39: hole punching with Neuron's own programs across the namespace network (test/network): the tracker in the
// cloud (its STUN on its port's number), hosts in home A (a router that keeps source ports) and home B (one that
// randomises them), neither mapping a port, so the tracker proves no endpoint for either; chats from the laptop (no
// NAT) and from a computer inside home A. Where ICE connects the pair (ice-pairs.test.ts measured which do), the
// client's frames take a punched channel and the tracker relays no byte for that host; where it cannot, the chat
// falls back to the tracker's relay. Hop to hop, home A's host punches its own channel to home C's (both keep source
// ports), so that seam carries no relay either; and a router restart under a punched path (its uplink down past
// LINK_SILENCE_MS, its connections forgotten) fails the chat over to another home. Every pairing gives llama.cpp's
// greedy tokens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scratchDir } from '../models'
import { buildHomeNetwork, type HomeNetwork, whyNoNamespaces } from '.'
import { HomeSwarm } from './home-swarm-kit'
import { restartRouter } from './router-state'

const TOKENS = 24
const why = whyNoNamespaces()

describe.skipIf(why !== undefined)(
  `chats punched through home routers${why === undefined ? '' : ` (skipped: ${why})`}`,
  () => {
    let net: HomeNetwork
    let swarm: HomeSwarm
    let cleanup: () => Promise<void> = async () => {}

    beforeAll(async () => {
      const scratch = await scratchDir('neuron-punched-homes-')
      cleanup = scratch.cleanup
      net = await buildHomeNetwork({ links: { a: { delayMs: 5 }, b: { delayMs: 5 } }, upnp: false })
      swarm = new HomeSwarm(net, scratch.dir, TOKENS)
      await swarm.start()
      await Promise.all([swarm.startHost('hostA', '0:2'), swarm.startHost('hostB', '2:5')])
      // no router maps a port: the tracker proves no endpoint for either host
      const rows = await swarm.hosts()
      for (const place of ['hostA', 'hostB'] as const)
        expect(rows.find((h) => h.hostId === swarm.hostIds[place])?.endpoint).toBeNull()
    }, 600_000)

    afterAll(async () => {
      await swarm?.stop()
      await net?.close()
      await cleanup()
    })

    it("from the laptop: both homes punched, llama.cpp's greedy tokens, and the tracker relays no byte", async () => {
      const before = { a: await swarm.relayedBytes('hostA'), b: await swarm.relayedBytes('hostB') }
      const chat = await swarm.chat('laptop')
      expect(chat.tokens).toEqual(swarm.oracle)
      expect(swarm.mentions(chat.punched, 'hostA') && swarm.mentions(chat.punched, 'hostB')).toBe(true)
      expect(chat.relayed).toEqual([])
      expect({ a: await swarm.relayedBytes('hostA'), b: await swarm.relayedBytes('hostB') }).toEqual(before)
    }, 300_000)

    it("from inside home A: its own host punched on the LAN; home B's as ICE allows, the same tokens", async () => {
      const before = { a: await swarm.relayedBytes('hostA'), b: await swarm.relayedBytes('hostB') }
      const chat = await swarm.chat('peerA')
      expect(chat.tokens).toEqual(swarm.oracle)
      expect(swarm.mentions(chat.punched, 'hostA')).toBe(true)
      expect(await swarm.relayedBytes('hostA')).toBe(before.a)
      // a randomising router against one that filters by port: the pair ICE_PAIR_AB says (a punch that cannot work
      // holds the chat PUNCH_WAIT_MS, then the relay carries it while the punch runs out)
      expect(swarm.mentions(chat.punched, 'hostB')).toBe(ICE_PAIR_AB)
      expect((await swarm.relayedBytes('hostB')) > before.b).toBe(!ICE_PAIR_AB)
    }, 300_000)

    const hopToHop =
      "hop to hop from the laptop: home A's host punches its own channel to home C's, and no seam crosses a relay"
    it(hopToHop, async () => {
      // home C's host (a router that keeps source ports, no port mapped) serves home B's blocks, fetched from it;
      // then home B's leaves
      await swarm.startHost('hostC', '2:5')
      await swarm.hostProcesses.hostB?.stop(2000)
      const rows = await swarm.hosts()
      expect(rows.find((h) => h.hostId === swarm.hostIds.hostC)?.endpoint).toBeNull()
      const before = { a: await swarm.relayedBytes('hostA'), c: await swarm.relayedBytes('hostC') }
      const chat = await swarm.chat('laptop', 'hop-to-hop')
      expect(chat.tokens).toEqual(swarm.oracle)
      expect(chat.route.map((h) => h.hostId)).toEqual([swarm.hostIds.hostA, swarm.hostIds.hostC])
      expect(chat.route.map((h) => h.reached)).toEqual(['punched', 'punched'])
      // every step's hidden states went from home A to home C over A's own channel, none through the client
      expect(chat.route[0]?.hiddenBytesIn).toBe(0)
      expect({ a: await swarm.relayedBytes('hostA'), c: await swarm.relayedBytes('hostC') }).toEqual(before)
    }, 420_000)

    const restart =
      "a router restart under a punched path (down past the link's silence bound, its connections forgotten): the " +
      'chat fails over to another home, the same tokens'
    it(restart, async () => {
      // home B's host serves [2, 5) again beside home C's: a failover has somewhere to go
      await swarm.startHost('hostB', '2:5')
      const homeOf: Partial<Record<string, 'b' | 'c'>> = {
        [swarm.hostIds.hostB ?? '-']: 'b',
        [swarm.hostIds.hostC ?? '-']: 'c',
      }
      let restarted: string | undefined
      const chat = await swarm.chat('laptop', 'hop-to-hop', async (child) => {
        const route = JSON.parse((await child.waitFor(/^\{"route".*$/m, 120_000))[0]) as { route: string[] }
        await child.waitFor(/^\{"token":\d+,"index":6,/m, 120_000)
        restarted = route.route[1]
        const home = homeOf[restarted ?? '-']
        if (home === undefined) throw new Error(`the route's second hop ${restarted} is neither home B's nor C's`)
        await restartRouter(net, home, 6_000)
      })
      expect(chat.tokens).toEqual(swarm.oracle)
      expect(chat.failovers.map((f) => f.hostId)).toEqual([restarted])
      expect(chat.route.map((h) => h.hostId)).not.toContain(restarted)
    }, 420_000)
  },
)

/** Whether ICE connects a computer in home A with one in home B (ice-pairs.test.ts measured it). */
const ICE_PAIR_AB = false
