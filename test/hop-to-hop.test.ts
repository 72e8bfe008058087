// Hop-to-hop forwarding (client/generation/hop-to-hop.ts, host/serving/forwarding.ts) against a real tracker and real
// hosts of stories260K on loopback: llama.cpp's greedy tokens, no hidden states on the client's link to the middle
// hop, no frame injected without the seam's capability, speculative decoding over forwarded hops, a hop stopped
// mid-generation, and a relayed hop's legs through the client.
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { GenerateRequest } from '../client/generation/request'
import { SwarmClient } from '../client/swarm-client'
import { WebSocketHopLink } from '../dataplane/hop-link'
import { NodeIdentity } from '../identity/keys'
import { oracleGreedy, oracleModel } from '../native/oracle'
import { decodeFrame, encodeFrame, jsonFrame, NeuronError, type Receipt, type RouteHop } from '../protocol'
import { damagedCopy } from './draft-models'
import { generateAll } from './generations'
import { STORIES_260K, scratchDir } from './models'
import { startNeuron } from './processes'
import { Host, type InProcessSwarm, QUIET_CHECKS, startSwarm } from './programs'

const TOKENS = 24
// No random probes or audits: the test's own traffic is all the hosts see.
const CHECKS = QUIET_CHECKS

let scratch: { dir: string; cleanup: () => Promise<void> }
let swarm: InProcessSwarm
let prompt: number[] = []
let oracle: number[] = []
/** The client's links to hosts as it opened them, by host id (the real links, watched). */
const links = new Map<string, WebSocketHopLink>()

function generate(
  client: SwarmClient,
  extra: Partial<GenerateRequest> = {},
  onToken?: (n: number, route: readonly RouteHop[]) => Promise<void> | void,
) {
  const request = {
    modelId: swarm.manifest.modelId,
    prompt,
    maxTokens: TOKENS,
    stopAtEog: false,
    forwarding: 'hop-to-hop' as const,
    ...extra,
  }
  return generateAll(client, request, onToken)
}

describe('hop-to-hop forwarding on a real swarm of three hosts', () => {
  beforeAll(async () => {
    scratch = await scratchDir('neuron-hop-to-hop-')
    swarm = await startSwarm(
      scratch.dir,
      STORIES_260K,
      [
        [0, 2],
        [2, 4],
        [4, 5],
      ],
      { checks: CHECKS },
    )
    const llama = await oracleModel(STORIES_260K)
    prompt = [...llama.tokenize('Once upon a time', true)]
    oracle = (await oracleGreedy(llama, prompt, TOKENS, swarm.manifest.nVocab, { threads: 1 })).map((s) => s.token)
    await llama.dispose()
    const connect = WebSocketHopLink.connect.bind(WebSocketHopLink)
    vi.spyOn(WebSocketHopLink, 'connect').mockImplementation(async (hostId, url, options) => {
      const link = await connect(hostId, url, options)
      if (hostId !== 'next-hop') links.set(hostId, link)
      return link
    })
  }, 180_000)
  afterAll(async () => {
    vi.restoreAllMocks()
    await swarm?.close()
    await scratch?.cleanup()
  })

  it(
    'gives llama.cpp’s greedy tokens, and the client’s links ' + 'to the first and middle hops carry no hidden states',
    async () => {
      const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
      try {
        links.clear()
        const rejectionsBefore = await swarm.tracker.store.ledger.rejections(swarm.hosts[1]?.hostId ?? '')
        const { tokens, summary, route } = await generate(client)
        expect(tokens).toEqual(oracle)
        expect(route.map((h) => h.blocks)).toEqual([
          [0, 2],
          [2, 4],
          [4, 5],
        ])
        const [first, middle, last] = route.map((h) => links.get(h.hostId))
        expect(first?.bytesIn.get('hidden') ?? 0).toBe(0)
        expect(middle?.bytesIn.get('hidden') ?? 0).toBe(0)
        expect(last?.bytesIn.get('token')).toBeGreaterThan(0)
        // every hop signed every step; the middle hop's, forwarded, are paid once the client countersigned them
        expect(summary.receipts.length).toBe(3 * TOKENS)
        // the client's copies carry its signature (the middle hop's once countersigned): none it hands in is refused
        // as no_client_signature, a refusal counted against the hop that did the work
        expect(summary.receipts.filter((r) => r.client === undefined)).toEqual([])
        const { verdicts } = await client.submitReceipts(summary.session, summary.receipts)
        expect(verdicts.filter((v) => !(v.ok || v.code === 'already_settled'))).toEqual([])
        const middleId = route[1]?.hostId ?? ''
        const stored = () => swarm.tracker.store.ledger.receipts({ hostId: middleId, session: summary.session })
        await vi.waitFor(async () => expect(await stored()).toHaveLength(TOKENS), { timeout: 20_000 })
        expect(await swarm.tracker.store.ledger.rejections(middleId)).toEqual(rejectionsBefore)
      } finally {
        await client.close()
      }
    },
  )

  it(
    'by default (auto) on loopback, the client near every host carries every seam itself: forwarding there saves no ' +
      'round trip',
    async () => {
      const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
      try {
        links.clear()
        const { tokens, route } = await generate(client, { forwarding: undefined })
        expect(tokens).toEqual(oracle)
        const [first, middle] = route.map((h) => links.get(h.hostId))
        expect(first?.bytesIn.get('hidden') ?? 0).toBeGreaterThan(0)
        expect(middle?.bytesIn.get('hidden') ?? 0).toBeGreaterThan(0)
      } finally {
        await client.close()
      }
    },
  )

  it(
    'refuses a frame injected into the session without the ' + 'seam’s capability, and the generation goes on unharmed',
    async () => {
      const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
      const session = randomBytes(16).toString('hex')
      const refusals: string[] = []
      try {
        const { tokens } = await generate(client, { session }, async (n, route) => {
          if (n !== 8) return
          const middle = route[1] as RouteHop
          const attacker = await WebSocketHopLink.connect('attacker', middle.endpoint ?? '')
          const receipt = fakeReceipt(session, middle)
          const hidden = { dtype: 'f16' as const, tokens: 1, width: 64, payload: new Uint8Array(128) }
          const frame = (trailer: unknown) =>
            encodeFrame({
              kind: 'forward',
              flags: 0,
              session,
              step: 100,
              position: 50,
              ...hidden,
              trailer: new TextEncoder().encode(JSON.stringify(trailer)),
            })
          // a guessed capability, and none at all (a plain forward from a connection that did not open the session)
          refusals.push(
            await rejectIfErrorCode(
              attacker.request(frame({ capability: randomBytes(32).toString('hex'), origin: receipt, prev: receipt })),
            ),
          )
          refusals.push(await rejectIfErrorCode(attacker.request(frame({ client: 'x'.repeat(86) }))))
          attacker.close()
        })
        expect(refusals).toEqual(['bad_capability', 'not_your_session'])
        expect(tokens).toEqual(oracle)
      } finally {
        await client.close()
      }
    },
  )

  it(
    'a hop that refuses what its predecessor forwards (a wrong capability): the client fetches that output and ' +
      'carries the leg, with the same tokens',
    async () => {
      const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
      const request = WebSocketHopLink.prototype.request
      // the middle hop (it both accepts and forwards) is opened with another capability than its predecessor was given
      const spy = vi.spyOn(WebSocketHopLink.prototype, 'request').mockImplementation(function (
        this: WebSocketHopLink,
        bytes: Uint8Array,
      ) {
        const frame = decodeFrame(bytes)
        if (frame.kind !== 'open') return request.call(this, bytes)
        const body = JSON.parse(new TextDecoder().decode(frame.payload))
        if (body.forwarding?.accept === undefined || body.forwarding?.next === undefined)
          return request.call(this, bytes)
        return request.call(
          this,
          jsonFrame('open', frame.session, frame.step, {
            ...body,
            forwarding: { ...body.forwarding, accept: randomBytes(32).toString('hex') },
          }),
        )
      })
      try {
        links.clear()
        const { tokens, route } = await generate(client)
        expect(tokens).toEqual(oracle)
        const [first, middle] = route.map((h) => links.get(h.hostId))
        // the first leg went through the client (fetched), the second stayed host to host
        expect(first?.bytesIn.get('hidden')).toBeGreaterThan(0)
        expect(middle?.bytesIn.get('hidden') ?? 0).toBe(0)
      } finally {
        spy.mockRestore()
        await client.close()
      }
    },
  )

  it('neuron chat --hop-to-hop streams the same greedy text from the command line', async () => {
    const chat = startNeuron([
      'chat',
      '--tracker',
      swarm.tracker.url,
      '--model',
      swarm.manifest.modelId,
      '--max-tokens',
      '16',
      '--hop-to-hop',
      '--data-dir',
      join(scratch.dir, 'chat'),
      'Once upon a time',
    ])
    try {
      await chat.waitFor(/16 tokens \(length\), [\d.]+ tokens\/s/)
      expect(chat.output()).toMatch(/^, there was a little girl named Lily/)
    } finally {
      await chat.stop()
    }
  })

  it(
    'with a draft too: self-drafting accepts every draft, gives llama.cpp’s greedy tokens, and the middle hop, ' +
      'forwarded to, checks every position and is paid',
    async () => {
      const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
      try {
        links.clear()
        const { tokens, summary, route } = await generate(client, { draft: { path: STORIES_260K, k: 4 } })
        expect(tokens).toEqual(oracle)
        const s = summary.speculation
        expect(s?.accepted).toBe(s?.drafted)
        // the prefill gives the first token, each verify step 5 more (4 drafts and the route's own)
        expect(s?.verifySteps).toBe(Math.ceil((TOKENS - 1) / 5))
        const [first, middle] = route.map((h) => links.get(h.hostId))
        expect(first?.bytesIn.get('hidden') ?? 0).toBe(0)
        expect(middle?.bytesIn.get('hidden') ?? 0).toBe(0)
        const middleId = route[1]?.hostId ?? ''
        const stored = () => swarm.tracker.store.ledger.receipts({ hostId: middleId, session: summary.session })
        await vi.waitFor(async () => expect(await stored()).toHaveLength(1 + (s?.verifySteps ?? 0)), {
          timeout: 20_000,
        })
        // each stored receipt carries the client's countersignature and the positions the step checked
        const middleReceipts = (await stored()).map((r) => r.receipt)
        expect(middleReceipts.every((r) => r.client !== undefined)).toBe(true)
        expect(middleReceipts.reduce((n, r) => n + r.tokens, 0)).toBe(
          prompt.length + (s?.verifySteps ?? 0) + (s?.drafted ?? 0),
        )
      } finally {
        await client.close()
      }
    },
  )

  it(
    'with a draft that mispredicts, a middle hop stopped mid-generation: its replacement replays only the ' +
      'accepted positions, and the tokens are still llama.cpp’s',
    async () => {
      await swarm.addHost([2, 4])
      const damaged = await damagedCopy(STORIES_260K, join(scratch.dir, 'damaged.gguf'), [1, 3])
      const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
      try {
        let stopped = ''
        const { tokens, summary } = await generate(client, { draft: { path: damaged, k: 4 } }, async (n, route) => {
          if (n < 10 || stopped !== '') return
          stopped = route[1]?.hostId ?? ''
          await swarm.hosts.find((h) => h.hostId === stopped)?.stop(0)
        })
        expect(tokens).toEqual(oracle)
        expect(summary.speculation?.accepted).toBeLessThan(summary.speculation?.drafted ?? 0)
        expect(summary.failovers.map((f) => [f.hostId, f.blocks])).toEqual([[stopped, [2, 4]]])
      } finally {
        await client.close()
      }
    },
  )

  it('a middle hop stopped mid-generation: a spare takes its span and the tokens are still llama.cpp’s', async () => {
    await swarm.addHost([2, 4])
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    try {
      let stopped = ''
      const { tokens, summary } = await generate(client, {}, async (n, route) => {
        if (n !== 10 || stopped !== '') return
        stopped = route[1]?.hostId ?? ''
        const victim = swarm.hosts.find((h) => h.hostId === stopped)
        await victim?.stop(0)
      })
      expect(stopped).not.toBe('')
      expect(tokens).toEqual(oracle)
      expect(summary.failovers.map((f) => [f.hostId, f.blocks])).toEqual([[stopped, [2, 4]]])
    } finally {
      await client.close()
    }
  })

  it(
    'the last hop stopped mid-generation: the leg into its replacement goes through the client, the leg between the ' +
      'first two hops stays host to host',
    async () => {
      const spare = await swarm.addHost([4, 5])
      const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
      let stopped = ''
      try {
        links.clear()
        let firstHop = ''
        const { tokens, summary } = await generate(client, {}, async (n, route) => {
          if (n !== 10 || stopped !== '') return
          firstHop = route[0]?.hostId ?? ''
          stopped = route[2]?.hostId ?? ''
          await swarm.hosts.find((h) => h.hostId === stopped)?.stop(0)
        })
        expect(tokens).toEqual(oracle)
        expect(summary.failovers.map((f) => [f.hostId, f.blocks])).toEqual([[stopped, [4, 5]]])
        // the first hop still forwards to the middle one: its link never carried hidden states, after the failover too
        expect(links.get(firstHop)?.bytesIn.get('hidden') ?? 0).toBe(0)
      } finally {
        await client.close()
        // one direct host of [4, 5) left, as the next test expects (it stops that one and routes a relayed one)
        if (spare.hostId !== stopped) await spare.stop(0)
      }
    },
  )

  const relayedLast =
    'a last hop reached only through the relay: the leg into it goes through the client, the leg before it stays ' +
    'host to host'
  it(relayedLast, async () => {
    const relayed = await swarm.addHost([4, 5], (options) => new Host({ ...options, relay: true }))
    // the direct host of [4, 5) leaves: the route's last hop is the relayed one
    await swarm.hosts[2]?.stop(0)
    expect(relayed.hostId).not.toBe('')
    // punching off: a host no channel reaches (test/punched-seams.test.ts forwards into one punched to)
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate(), () => {}, { punch: false })
    try {
      links.clear()
      const { tokens, route } = await generate(client)
      expect(tokens).toEqual(oracle)
      expect(route.at(-1)?.endpoint).toBeNull()
      const [first, middle] = route.map((h) => links.get(h.hostId))
      expect(first?.bytesIn.get('hidden') ?? 0).toBe(0)
      expect(middle?.bytesIn.get('hidden')).toBeGreaterThan(0)
    } finally {
      await client.close()
    }
  })
})

/** The error code a request was refused with ('answered' when it was not). */
async function rejectIfErrorCode(request: Promise<unknown>): Promise<string> {
  try {
    await request
    return 'answered'
  } catch (error) {
    return error instanceof NeuronError ? error.code : String(error)
  }
}

/** A receipt-shaped claim an attacker can make up (it has no host's or client's key). */
function fakeReceipt(session: string, hop: RouteHop): Receipt {
  const sig = 'A'.repeat(86)
  const price = { promptMicroPerToken: 0, completionMicroPerToken: 0 }
  const body = {
    session,
    step: 100,
    hostId: hop.hostId,
    blocks: [0, 2] as [number, number],
    tokens: 1,
    position: 50,
    modelId: swarm.manifest.modelId,
    price,
  }
  return {
    ...body,
    tracker: 'A'.repeat(43),
    input: '0'.repeat(64),
    output: '0'.repeat(64),
    client: sig,
    signature: sig,
  }
}
