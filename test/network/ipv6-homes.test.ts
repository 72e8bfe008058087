// Issue 39, IPv6: Neuron's own programs across the namespace network (test/network). A host in home D, whose router
// gives it a global IPv6 address behind a firewall that drops new inbound v6 (and maps no v4 port), is not reachable
// while the router offers no pinhole: the tracker's dial-back of its v6 candidate meets the firewall and the host is
// relayed. Once the router runs PCP (miniupnpd started), the host's next ask opens a pinhole, its offer changes, the
// tracker proves the v6 endpoint by dial-back, and the laptop chats straight to it: llama.cpp's greedy tokens, and the
// tracker relays no byte for it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scratchDir } from '../models'
import type { NeuronProcess } from '../processes'
import { buildHomeNetwork, type HomeNetwork, whyNoMiniupnpd, whyNoNamespaces } from '.'
import { HomeSwarm } from './home-swarm-kit'

const TOKENS = 16
const why = whyNoNamespaces() ?? whyNoMiniupnpd()

describe.skipIf(why !== undefined)(
  `a host reached over IPv6 through its router's pinhole${why === undefined ? '' : ` (skipped: ${why})`}`,
  () => {
    let net: HomeNetwork
    let swarm: HomeSwarm
    let cleanup: () => Promise<void> = async () => {}
    let hostId = ''
    let host: NeuronProcess

    const row = async () => (await swarm.hosts()).find((h) => h.hostId === hostId)

    beforeAll(async () => {
      const scratch = await scratchDir('neuron-ipv6-homes-')
      cleanup = scratch.cleanup
      net = await buildHomeNetwork({ links: { d: { delayMs: 5 } } })
      // the router offers no pinhole yet
      await net.stopUpnp('d')
      swarm = new HomeSwarm(net, scratch.dir, TOKENS)
      await swarm.start()
      hostId = await swarm.startHost('hostD', `0:${swarm.manifest?.nLayer}`)
      host = swarm.hostProcesses.hostD as NeuronProcess
    }, 600_000)

    afterAll(async () => {
      await swarm?.stop()
      await net?.close()
      await cleanup()
    })

    it('is relayed while its router opens no pinhole: the firewall drops the dial-back of its v6 address', async () => {
      expect(host.output()).toMatch(/data plane listening at wss:\/\/\[::\]:\d+\//)
      expect((await row())?.endpoint).toBeNull()
    }, 120_000)

    it("once the router runs PCP: a pinhole, the v6 endpoint proved by dial-back, and the laptop's chat goes " +
      "straight to it, llama.cpp's greedy tokens, no byte through the tracker", async () => {
      await net.restartUpnp('d')
      await host.waitFor(/the router's firewall lets the internet reach \[2001:db8:4::10\]:\d+/, 60_000)
      let endpoint: string | null | undefined = null
      for (let i = 0; i < 30 && endpoint == null; i++) {
        endpoint = (await row())?.endpoint
        if (endpoint == null) await new Promise((resolve) => setTimeout(resolve, 1_000))
      }
      expect(endpoint).toMatch(/^wss:\/\/\[2001:db8:4::10\]:\d+\/$/)
      const before = (await row())?.relayedBytes ?? Number.NaN
      const chat = await swarm.chat('laptop')
      expect(chat.tokens).toEqual(swarm.oracle)
      expect(chat.route.map((h) => [h.hostId, h.reached])).toEqual([[hostId, 'direct']])
      expect((await row())?.relayedBytes ?? Number.NaN).toBe(before)
    }, 300_000)
  },
)
