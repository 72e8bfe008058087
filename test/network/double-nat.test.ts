// Issue 39, a double NAT: home E sits behind its ISP's carrier-grade NAT as well as its own router (test/network's
// carrierE; both keep ports, both filter as Linux conntrack does). Its router runs miniupnpd, which maps the host's
// port on the router alone and names the carrier's address (its STUN check cannot see the carrier filter): the
// mapping the host offers answers nobody, so the tracker proves no endpoint. ICE still punches through both NATs
// (ice-pairs.test.ts): the laptop's chat takes a punched channel, llama.cpp's greedy tokens, no byte relayed; and hop
// to hop, home A's host punches its own channel into home E and home E's out to home A, neither seam through the
// client or a relay.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scratchDir } from '../models'
import { buildHomeNetwork, type HomeNetwork, whyNoMiniupnpd, whyNoNamespaces } from '.'
import { HomeSwarm } from './home-swarm-kit'

const TOKENS = 16
const why = whyNoNamespaces() ?? whyNoMiniupnpd()

describe.skipIf(why !== undefined)(
  `a home behind a carrier NAT and its own router${why === undefined ? '' : ` (skipped: ${why})`}`,
  () => {
    let net: HomeNetwork
    let swarm: HomeSwarm
    let cleanup: () => Promise<void> = async () => {}

    beforeAll(async () => {
      const scratch = await scratchDir('neuron-double-nat-')
      cleanup = scratch.cleanup
      net = await buildHomeNetwork()
      swarm = new HomeSwarm(net, scratch.dir, TOKENS)
      await swarm.start()
      await swarm.startHost('hostE', '0:5')
    }, 600_000)

    afterAll(async () => {
      await swarm?.stop()
      await net?.close()
      await cleanup()
    })

    const punches =
      "its router maps a port the internet cannot reach: no endpoint proven, and the laptop's chat punches through " +
      "both NATs with llama.cpp's greedy tokens and no byte relayed"
    it(punches, async () => {
      const host = swarm.hostProcesses.hostE
      // UPnP answered on the home's router, naming the carrier's address (what its STUN check saw)
      expect(host?.output()).toContain(`the router forwards ${net.homes.e.wan}:`)
      expect((await swarm.hosts()).find((h) => h.hostId === swarm.hostIds.hostE)?.endpoint).toBeNull()
      const before = await swarm.relayedBytes('hostE')
      const chat = await swarm.chat('laptop')
      expect(chat.tokens).toEqual(swarm.oracle)
      expect(chat.route.map((h) => h.reached)).toEqual(['punched'])
      expect(chat.relayed).toEqual([])
      expect(await swarm.relayedBytes('hostE')).toBe(before)
    }, 300_000)

    const seams =
      'hop to hop from home A into the double NAT and out again to home A: both seams punched host to host, ' +
      "llama.cpp's greedy tokens, no byte relayed"
    it(seams, async () => {
      // one host per span, so the route is A, E, A: home E's host serves the middle blocks now
      await swarm.hostProcesses.hostE?.stop(2000)
      await Promise.all([
        swarm.startHost('hostA', '0:2'),
        swarm.startHost('hostE', '2:4'),
        swarm.startHost('peerA', '4:5'),
      ])
      const places = ['hostA', 'hostE', 'peerA'] as const
      const relayed = async () => Promise.all(places.map((p) => swarm.relayedBytes(p)))
      const before = await relayed()
      const chat = await swarm.chat('laptop', 'hop-to-hop')
      expect(chat.tokens).toEqual(swarm.oracle)
      expect(chat.route.map((h) => h.hostId)).toEqual(places.map((p) => swarm.hostIds[p]))
      expect(chat.route.map((h) => h.reached)).toEqual(['punched', 'punched', 'punched'])
      // each hop's output went on to the next itself: none came to the client but the last hop's token
      expect(chat.route.slice(0, -1).map((h) => h.hiddenBytesIn)).toEqual([0, 0])
      expect(await relayed()).toEqual(before)
    }, 420_000)
  },
)
