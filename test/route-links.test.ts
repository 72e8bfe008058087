// A route's links, against a real tracker and three real hosts of stories260K on loopback: the client opens every hop
// at once (client/open-hops.ts), and the client's links to the hosts and the hosts' links to their successors stay
// open between sessions (dataplane/idle-links.ts).
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { WebSocketHopLink } from '../dataplane/hop-link'
import { NodeIdentity } from '../identity/keys'
import { oracleGreedy, oracleModel } from '../native/oracle'
import { generateAll } from './generations'
import { STORIES_260K, scratchDir } from './models'
import { type InProcessSwarm, QUIET_CHECKS, startSwarm } from './programs'

const TOKENS = 16
// No random probes or audits: the test's own traffic is all the hosts see.
const CHECKS = QUIET_CHECKS

let scratch: { dir: string; cleanup: () => Promise<void> }
let swarm: InProcessSwarm
let prompt: number[] = []
let oracle: number[] = []
/** Connections the hosts opened to their successors (their Forwarders' links), counted as they open. */
let hostToHost = 0
/** Those links, as they opened. */
const hostLinks: WebSocketHopLink[] = []
/** The client's links to hosts as it opened them, by host id. */
const clientLinks = new Map<string, WebSocketHopLink>()
/** Hosts the client started connecting to, in order. */
const connecting: string[] = []
/** While set, the client's connection to this host waits for `held` before it starts. */
let holding: { hostId: string; held: Promise<void> } | undefined

/** A new client of the swarm, and a chat of it with its seams forwarded as `forwarding` says. */
async function chatting(forwarding: 'client-relayed' | 'hop-to-hop') {
  const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
  const request = { modelId: swarm.manifest.modelId, prompt, maxTokens: TOKENS, stopAtEog: false, forwarding }
  return { client, chat: () => generateAll(client, request) }
}

/** Until every host's sessions have closed (their links to successors parked for the next session). */
const allClosed = () =>
  vi.waitFor(() => expect(swarm.hosts.map((h) => h.activeSessions)).toEqual([0, 0, 0]), { timeout: 10_000 })

describe("a route's links", () => {
  beforeAll(async () => {
    scratch = await scratchDir('neuron-hop-links-')
    const ranges: [number, number][] = [
      [0, 2],
      [2, 4],
      [4, 5],
    ]
    swarm = await startSwarm(scratch.dir, STORIES_260K, ranges, { checks: CHECKS })
    const llama = await oracleModel(STORIES_260K)
    prompt = [...llama.tokenize('Once upon a time', true)]
    oracle = (await oracleGreedy(llama, prompt, TOKENS, swarm.manifest.nVocab, { threads: 1 })).map((s) => s.token)
    await llama.dispose()
    const connect = WebSocketHopLink.connect.bind(WebSocketHopLink)
    vi.spyOn(WebSocketHopLink, 'connect').mockImplementation(async (hostId, url, options) => {
      if (hostId !== 'next-hop') connecting.push(hostId)
      if (holding?.hostId === hostId) await holding.held
      const link = await connect(hostId, url, options)
      if (hostId === 'next-hop') {
        hostToHost++
        hostLinks.push(link)
      } else clientLinks.set(hostId, link)
      return link
    })
  }, 180_000)
  afterAll(async () => {
    vi.restoreAllMocks()
    await swarm?.close()
    await scratch?.cleanup()
  })

  it('the client opens every hop at once: it reaches the later hops while the first one still connects', async () => {
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    let release = () => {}
    const first = swarm.hosts[0]?.hostId ?? ''
    holding = { hostId: first, held: new Promise<void>((r) => (release = r)) }
    connecting.length = 0
    try {
      const request = { modelId: swarm.manifest.modelId, prompt, maxTokens: TOKENS, stopAtEog: false }
      const chat = generateAll(client, { ...request, forwarding: 'client-relayed' })
      // one after another, the second hop would wait for the first one's open, held here
      await vi.waitFor(() => expect(new Set(connecting)).toEqual(new Set(swarm.hosts.map((h) => h.hostId))), {
        timeout: 10_000,
      })
      release()
      const { tokens, route } = await chat
      expect(tokens).toEqual(oracle)
      expect(route[0]?.hostId).toBe(first)
    } finally {
      release()
      holding = undefined
      await client.close()
    }
  })

  it('a second chat of one client goes over the links its first left to the hosts, counting its bytes', async () => {
    const { client, chat } = await chatting('client-relayed')
    try {
      connecting.length = 0
      const first = await chat()
      expect(connecting).toHaveLength(3)
      const second = await chat()
      expect(second.tokens).toEqual(oracle)
      expect(connecting).toHaveLength(3)
      // the first hop's hidden states, per session: the kept link's earlier bytes are not this session's
      const hidden = (run: typeof first) => run.summary.route.map((h) => h.hiddenBytesIn)
      expect(hidden(second)).toEqual(hidden(first))
      expect(hidden(second)[0]).toBeGreaterThan(0)
    } finally {
      await client.close()
    }
  })

  it('a kept link whose path went silent (no close, no reset: a router dropped it) is found dead at the next ' +
    'open, and that hop is connected afresh: the chat answers as before', async () => {
    const { client, chat } = await chatting('client-relayed')
    try {
      connecting.length = 0
      const first = await chat()
      const middle = first.route[1]?.hostId ?? ''
      // the client hears nothing more on its kept link to the middle hop (what it sends still arrives)
      const kept = clientLinks.get(middle) as unknown as { socket: { _socket: { pause(): void } } }
      kept.socket._socket.pause()
      const started = performance.now()
      const second = await chat()
      console.log(`a chat over a kept link gone silent: ${(performance.now() - started).toFixed(0)} ms`)
      expect(second.tokens).toEqual(oracle)
      // one new connection, to the silent hop; the others' kept links served
      expect(connecting.filter((id) => id === middle)).toHaveLength(2)
      expect(connecting).toHaveLength(4)
    } finally {
      await client.close()
    }
  }, 60_000)

  it('a second chat forwards over the links the first left between the hosts: no handshake on a seam', async () => {
    const { client, chat } = await chatting('hop-to-hop')
    try {
      const first = await chat()
      expect(first.tokens).toEqual(oracle)
      expect(hostToHost).toBe(2)
      await allClosed()
      const second = await chat()
      expect(second.tokens).toEqual(oracle)
      expect(second.route.map((h) => h.hostId)).toEqual(first.route.map((h) => h.hostId))
      // both seams went host to host: the middle hop's link to the client carried no hidden state
      expect(clientLinks.get(second.route[1]?.hostId ?? '')?.bytesIn.get('hidden') ?? 0).toBe(0)
      expect(hostToHost).toBe(2)
    } finally {
      await client.close()
    }
  })

  it("a host's kept link to its successor whose path went silent is found dead at the next session's open, and the " +
    'host connects afresh: the seams stay host to host', async () => {
    const { client, chat } = await chatting('hop-to-hop')
    try {
      const first = await chat()
      expect(first.tokens).toEqual(oracle)
      await allClosed()
      // the paths of the links the hosts keep to their successors die both ways, without a close or a reset: nothing
      // sent on them arrives, nothing comes back
      const before = hostToHost
      for (const link of hostLinks.slice(-2)) {
        const socket = (link as unknown as { socket: { _socket: { pause(): void }; send(): void; ping(): void } })
          .socket
        socket._socket.pause()
        socket.send = () => {}
        socket.ping = () => {}
      }
      const started = performance.now()
      const second = await chat()
      console.log(`a hop-to-hop chat over kept host links gone silent: ${(performance.now() - started).toFixed(0)} ms`)
      expect(second.tokens).toEqual(oracle)
      // each host connected to its successor afresh, and both seams still went host to host: the middle hop's link
      // to the client carried no hidden state (a leg refused for silence would have gone through the client)
      expect(hostToHost - before).toBe(2)
      expect(clientLinks.get(second.route[1]?.hostId ?? '')?.bytesIn.get('hidden') ?? 0).toBe(0)
    } finally {
      await client.close()
    }
  }, 60_000)
})
