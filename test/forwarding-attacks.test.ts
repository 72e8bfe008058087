// Attacks on hop-to-hop forwarding by the session's own client, against a real tracker and three real hosts of
// stories260K on loopback. Each as measured before its fix: holding the seam's capability, the client made up its
// first hop's receipt and the middle hop ran a step no hop before it ran; never countersigning the steps forwarded
// into the later hops, it got 12 tokens and the last hop (2/5 of the blocks) earned nothing. Stopped after 2 steps,
// the later hops still earned nothing for those until they handed them in with the chain that proves the client
// asked for them.
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { chainOpenings, directLegs } from '../client/generation/hop-to-hop'
import { planRoute } from '../client/grant-claim'
import { closeHops, openHops } from '../client/open-hops'
import { SwarmClient } from '../client/swarm-client'
import { WebSocketHopLink } from '../dataplane/hop-link'
import { NodeIdentity } from '../identity/keys'
import { payloadSha256 } from '../identity/tickets'
import { decodeFrame, encodeFrame, NeuronError, type Receipt, type RouteHop, stepMessage } from '../protocol'
import { generateAll } from './generations'
import { STORIES_260K, scratchDir } from './models'
import { type InProcessSwarm, QUIET_CHECKS, startSwarm } from './programs'

// No random probes or audits: the attacks' own traffic is all the hosts see.
const CHECKS = QUIET_CHECKS

describe('hop-to-hop forwarding against its own client', () => {
  let scratch: { dir: string; cleanup: () => Promise<void> }
  let swarm: InProcessSwarm
  beforeAll(async () => {
    scratch = await scratchDir('neuron-forwarding-attacks-')
    const spans: [number, number][] = [
      [0, 2],
      [2, 4],
      [4, 5],
    ]
    swarm = await startSwarm(scratch.dir, STORIES_260K, spans, { checks: CHECKS })
  }, 180_000)
  afterAll(async () => {
    vi.restoreAllMocks()
    await swarm?.close()
    await scratch?.cleanup()
  })

  it("refuses a forwarded step whose chain its own client made up: the receipts must be the hops' own", async () => {
    const identity = NodeIdentity.generate()
    const client = await SwarmClient.connect(swarm.tracker.url, identity)
    const session = randomBytes(16).toString('hex')
    const modelId = swarm.manifest.modelId
    const plan = { modelId, maxTokens: 16, promptTokens: 1, exclude: [], session }
    const route = await planRoute(client.tracker, identity, plan, () => {})
    const openings = chainOpenings(route.hops, directLegs(route.hops))
    const request = { modelId, prompt: [1], maxTokens: 15 }
    const hops = await openHops(client.hopOpener, route.hops, session, request, 16, true, openings)
    try {
      const [first, middle] = route.hops as [RouteHop, RouteHop]
      const payload = new Uint8Array(2 * swarm.manifest.nEmbd)
      const blocks: [number, number] = [first.blocks[0], first.blocks[1]]
      const step = { session, hostId: first.hostId, blocks, step: 1, position: 0, tokens: 1 }
      const input = payloadSha256(Uint8Array.of(1, 0, 0, 0))
      // the first hop's receipt, made up by the client: its own signature of the step is real, the host's is not
      const forged: Receipt = {
        ...step,
        modelId,
        price: first.ticket?.price ?? { promptMicroPerToken: 0, completionMicroPerToken: 0 },
        tracker: swarm.tracker.identity.publicKey,
        input,
        output: payloadSha256(payload),
        client: identity.sign(stepMessage({ ...step, input })),
        signature: 'A'.repeat(86),
      }
      const capability = openings[1]?.accept ?? ''
      const trailer = new TextEncoder().encode(JSON.stringify({ capability, origin: forged, prev: forged }))
      const frame = { kind: 'forward', dtype: 'f16', flags: 0, session, step: 1, position: 0, tokens: 1 } as const
      const link = await WebSocketHopLink.connect('attacker', middle.endpoint ?? '')
      const answered = await errorCodeOf(
        link.request(encodeFrame({ ...frame, width: swarm.manifest.nEmbd, payload, trailer })),
      )
      link.close()
      expect(answered).toBe('bad_chain')
    } finally {
      await closeHops(hops, session)
      await client.close()
    }
  })

  it('stops a client that never countersigns what was forwarded into a hop, a step after it owes one', async () => {
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    // the client's countersigns never leave it
    const request = WebSocketHopLink.prototype.request
    vi.spyOn(WebSocketHopLink.prototype, 'request').mockImplementation(function (
      this: WebSocketHopLink,
      bytes: Uint8Array,
    ) {
      if (decodeFrame(bytes).kind === 'sign') return new Promise(() => {})
      return request.call(this, bytes)
    })
    let tokens = 0
    const session = randomBytes(16).toString('hex')
    try {
      const request = {
        session,
        modelId: swarm.manifest.modelId,
        prompt: [1, 403, 407, 261, 378],
        maxTokens: 12,
        stopAtEog: false,
        forwarding: 'hop-to-hop' as const,
        waitForSessionMs: 0,
      }
      const outcome = await generateAll(client, request, (n) => {
        tokens = n
      }).then(
        () => 'every token',
        (e: unknown) => (e instanceof NeuronError ? e.code : String(e)),
      )
      // the later hops served steps 1 and 2 unsigned, then refused step 3: the client owed step 1's countersign
      expect(outcome).toBe('countersign_owed')
      expect(tokens).toBe(2)
      // the steps the later hops served are paid all the same: each hands them in with their chain
      const [, middle, last] = swarm.hosts
      const paid = async (hostId: string) =>
        (await swarm.tracker.store.ledger.receipts({ session })).filter(
          (r) => r.receipt.hostId === hostId && r.hostEarned > 0,
        ).length
      await vi.waitFor(
        async () => expect([await paid(middle?.hostId ?? ''), await paid(last?.hostId ?? '')]).toEqual([2, 2]),
        {
          timeout: 10_000,
          interval: 200,
        },
      )
    } finally {
      vi.restoreAllMocks()
      await client.close()
    }
  })
})

/** The code of the error a request answers, or 'answered' when it answered. */
async function errorCodeOf(request: Promise<unknown>): Promise<string> {
  try {
    await request
    return 'answered'
  } catch (error) {
    return error instanceof NeuronError ? error.code : String(error)
  }
}
