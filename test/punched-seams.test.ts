// Issue 39, hop-to-hop seams between hosts that accept no connections (both --relay), on 127.0.0.1: the client punches
// a channel to each, and the first hop punches its own to the second, so every step's hidden states go host to host
// and the tracker relays no byte. Real tracker, real hosts, real client, the real GGUF: llama.cpp's greedy tokens. A
// first hop that cannot punch leaves the seam to the client (same tokens); channels that die mid-generation (the
// second host's punched channels all closed, as when its router restarts) fail over and punch anew, same tokens.
// (Across routers, test/network/punched-homes.test.ts.)
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type GenerationSummary, SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import { oracleGreedy, oracleModel } from '../native/oracle'
import { STORIES_260K, scratchDir } from './models'
import { Host, type InProcessSwarm, startSwarm } from './programs'

const TOKENS = 16

describe('hop-to-hop seams over channels punched between hosts that accept no connections', () => {
  let scratch: { dir: string; cleanup: () => Promise<void> }
  let swarm: InProcessSwarm
  const hostLogs: string[][] = [[], [], []]
  let prompt: number[] = []
  let oracle: number[] = []

  beforeAll(async () => {
    scratch = await scratchDir('neuron-punched-seams-')
    swarm = await startSwarm(scratch.dir, STORIES_260K, [], { heartbeatMs: 300 })
    // two hosts serve the second span: a failover has somewhere to go
    const spans: [number, number][] = [
      [0, 2],
      [2, 5],
      [2, 5],
    ]
    for (const [i, blocks] of spans.entries()) {
      const log = (l: string) => hostLogs[i]?.push(l)
      const host = await swarm.addHost(blocks, (options) => new Host({ ...options, relay: true, log }))
      expect(host.state.endpoint).toBeNull()
    }
    const llama = await oracleModel(STORIES_260K)
    prompt = [...llama.tokenize('Once upon a time', true)]
    oracle = (await oracleGreedy(llama, prompt, TOKENS, swarm.manifest.nVocab, { threads: 1 })).map((s) => s.token)
    await llama.dispose()
  }, 180_000)

  afterEach(() => {
    delete process.env.NEURON_PUNCH
  })

  afterAll(async () => {
    await swarm?.close()
    await scratch?.cleanup()
  })

  const relayed = () => swarm.hosts.reduce((sum, h) => sum + swarm.tracker.relay.bytesFor(h.hostId), 0)

  async function generate(
    client: SwarmClient,
    onToken: (index: number) => void = () => {},
  ): Promise<{ tokens: number[]; summary: GenerationSummary }> {
    const tokens: number[] = []
    const run = client.generate({
      modelId: swarm.manifest.modelId,
      prompt,
      maxTokens: TOKENS,
      stopAtEog: false,
      forwarding: 'hop-to-hop',
    })
    let next = await run.next()
    while (!next.done) {
      tokens.push(next.value.token)
      onToken(tokens.length)
      next = await run.next()
    }
    return { tokens, summary: next.value }
  }

  const forwards =
    "forwards host to host over a punched channel: llama.cpp's greedy tokens, no hidden state through the client, " +
    'no byte through the tracker'
  it(forwards, async () => {
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate(), () => {}, { punch: true })
    try {
      const before = relayed()
      const { tokens, summary } = await generate(client)
      expect(tokens).toEqual(oracle)
      expect(summary.route.map((h) => h.blocks)).toEqual([
        [0, 2],
        [2, 5],
      ])
      expect(summary.route.map((h) => h.reached)).toEqual(['punched', 'punched'])
      // every step's hidden states went from the first host to the second itself
      expect(summary.route[0]?.hiddenBytesIn).toBe(0)
      expect(relayed() - before).toBe(0)
      const second = summary.route[1]?.hostId
      expect(hostLogs[0]?.some((l) => l.startsWith(`punched a channel to host ${second}`))).toBe(true)
      // the forwarded-in hop's receipts are countersigned: none the client hands in is refused
      const { verdicts } = await client.submitReceipts(summary.session, summary.receipts)
      expect(verdicts.filter((v) => !v.ok)).toEqual([])
    } finally {
      await client.close()
    }
  }, 120_000)

  const leaves =
    'leaves the seam to the client where the first host punches nothing (NEURON_PUNCH=0 on the host): the same tokens'
  it(leaves, async () => {
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate(), () => {}, { punch: true })
    try {
      process.env.NEURON_PUNCH = '0' // read by the hosts (this process); the client was told punch: true
      const before = relayed()
      const { tokens, summary } = await generate(client)
      expect(tokens).toEqual(oracle)
      expect(summary.route.map((h) => h.reached)).toEqual(['punched', 'punched'])
      expect(summary.route[0]?.hiddenBytesIn).toBeGreaterThan(0)
      expect(relayed() - before).toBe(0)
    } finally {
      await client.close()
    }
  }, 120_000)

  const failsOver =
    "fails over and punches anew when the second span's punched channels all die mid-generation: the same tokens"
  it(failsOver, async () => {
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate(), () => {}, { punch: true })
    try {
      type Punched = { serving: { punched?: { close(): void; size: number } } }
      const seconds = swarm.hosts.slice(1) as unknown as Punched[]
      // a first chat punches the client's channels to all three (the spare measured over its own): none is mid-punch
      expect((await generate(client)).tokens).toEqual(oracle)
      const { tokens, summary } = await generate(client, (index) => {
        // every channel to both hosts of the second span: the client's and the first host's, as if their routers
        // restarted; the failover's host is punched anew, by the client and by the first host
        if (index === 6) for (const h of seconds) h.serving.punched?.close()
      })
      expect(tokens).toEqual(oracle)
      expect(summary.failovers.length).toBeGreaterThanOrEqual(1)
      expect(summary.route.map((h) => h.reached)).toEqual(['punched', 'punched'])
      expect(seconds.some((h) => (h.serving.punched?.size ?? 0) > 0)).toBe(true)
    } finally {
      await client.close()
    }
  }, 120_000)
})
