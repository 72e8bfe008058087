// Every step signed by both sides, against a real tracker and a real host of stories260K. Each attack as measured
// before the change: a client numbering every step as a failover replay got 31 tokens and paid 0 (then, until replays
// needed a failover ticket, any plain ticket could number its steps as replays); a client numbering every decode
// step "2" paid about 10 %, and the host's refused receipts counted against it; a host billed 32 steps nobody sent.
// A client re-running its last step with other inputs had 8 of 8 re-runs served (each a forward pass with another
// input and output) and paid for the step once.
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { forwardFrame, type HopInput } from '../dataplane/hop-frames'
import { WebSocketHopLink } from '../dataplane/hop-link'
import { connectTracker } from '../dataplane/tracker-connection'
import { NodeIdentity } from '../identity/keys'
import { payloadSha256, signOpen } from '../identity/tickets'
import {
  ClientToTracker,
  callRpc,
  FLAG_NO_SAMPLE,
  type Frame,
  HostToTracker,
  jsonFrame,
  NeuronError,
  REPLAY_STEP_BASE,
  Receipt,
  type ReceiptBody,
  type RouteHop,
  readTrailer,
  receiptMessage,
  stepMessage,
} from '../protocol'
import { STORIES_260K, scratchDir } from './models'
import { type InProcessSwarm, QUIET_CHECKS, startSwarm } from './programs'

const PROMPT = [1, 403, 407, 261, 378]
// No random probes or audits: the attacks' own traffic is all the host sees.
const CHECKS = QUIET_CHECKS

/**
 * A raw client of the swarm: plans a one-hop session, opens it, and sends whatever steps it likes (each signed by its
 * key). `failover`: it plans again claiming its host failed, and opens with that plan's failover ticket.
 */
async function rawSession(swarm: InProcessSwarm, identity = NodeIdentity.generate(), failover = false) {
  const tracker = await connectTracker(swarm.tracker.url, '/clients', identity)
  const session = randomBytes(16).toString('hex')
  const modelId = swarm.manifest.modelId
  const maxTokens = PROMPT.length + 16
  const plan = { modelId, maxTokens, promptTokens: PROMPT.length, session, exclude: [] }
  let route = await callRpc(tracker, ClientToTracker, 'route.plan', plan)
  const planned = route.hops[0] as RouteHop
  if (failover)
    route = await callRpc(tracker, ClientToTracker, 'route.plan', {
      ...plan,
      span: planned.blocks,
      failedHost: planned.hostId,
    })
  const hop = route.hops[0] as RouteHop
  if (hop.endpoint === null || hop.ticket === undefined)
    throw new Error('the test swarm routes to a direct, ticketed host')
  const link = await WebSocketHopLink.connect(hop.hostId, hop.endpoint, { fingerprint: hop.fingerprint })
  const body = {
    modelId,
    blocks: hop.blocks,
    maxTokens,
    ticket: hop.ticket,
    signature: signOpen(identity, hop.ticket, { blocks: hop.blocks, maxTokens }),
  }
  await link.request(jsonFrame('open', session, 0, { ...body, sampling: { temperature: 0 } }))
  const ids = (tokens: number[]): HopInput => ({
    dtype: 'i32',
    tokens: tokens.length,
    width: 1,
    payload: new Uint8Array(Int32Array.from(tokens).buffer),
  })
  const signing = { identity, hostId: hop.hostId, blocks: hop.blocks }
  return {
    tracker,
    identity,
    session,
    hop,
    step: (tokens: number[], step: number, position: number, flags = 0): Promise<Frame> =>
      link.request(forwardFrame(ids(tokens), flags, session, step, position, signing)),
    /** Hands in the answers' receipts as a client may; the tracker's verdicts. */
    submit: (answers: Frame[]) =>
      callRpc(tracker, ClientToTracker, 'receipts.submit', {
        session,
        receipts: answers.map((a) => readTrailer(a, Receipt)).filter((r) => r !== undefined),
      }),
    /** Ends the session at the host and the tracker, so the next test's plans find the host's slots free. */
    close: async () => {
      await link.request(jsonFrame('close', session, 0xfffffffe, {})).catch(() => undefined)
      link.close()
      await callRpc(tracker, ClientToTracker, 'session.end', { session }).catch(() => undefined)
      tracker.close()
    },
  }
}

const charged = (verdicts: { charged: number }[]) => verdicts.reduce((s, v) => s + v.charged, 0)

describe(`every step signed by both sides`, () => {
  let swarm: InProcessSwarm
  let dir = ''
  let cleanup: () => Promise<void> = async () => {}
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-step-attacks-'))
    swarm = await startSwarm(dir, STORIES_260K, [[0, 5]], { checks: CHECKS })
  }, 180_000)
  afterAll(async () => {
    await swarm?.close()
    await cleanup()
  })

  it(
    'replay numbering on a plain ticket is refused as the client’s doing: no token, no receipt, nothing counted ' +
      'against the host',
    async () => {
      const attacker = await rawSession(swarm)
      const rejectionsBefore = await swarm.tracker.store.ledger.rejections(attacker.hop.hostId)
      const scoreBefore = swarm.tracker.reputation.of(attacker.hop.hostId)
      try {
        expect(attacker.hop.ticket?.replay).toBeUndefined()
        for (const flags of [FLAG_NO_SAMPLE, 0]) {
          const refused = attacker.step(PROMPT, REPLAY_STEP_BASE, 0, flags)
          await expect(refused).rejects.toBeInstanceOf(NeuronError)
          await expect(refused).rejects.toMatchObject({
            code: 'replay_not_ticketed',
            message: expect.stringMatching(/plain one; number steps from 1/),
          })
        }
        // numbered plainly, the session goes on
        expect((await attacker.step(PROMPT, 1, 0)).kind).toBe('token')
        await expect(attacker.step([13], REPLAY_STEP_BASE + 1, PROMPT.length, FLAG_NO_SAMPLE)).rejects.toMatchObject({
          code: 'replay_not_ticketed',
        })
        expect(await swarm.tracker.store.ledger.rejections(attacker.hop.hostId)).toEqual(rejectionsBefore)
        expect(swarm.tracker.reputation.of(attacker.hop.hostId).failedSteps).toBe(scoreBefore.failedSteps)
      } finally {
        await attacker.close()
      }
    },
  )

  it(
    'a failover ticket names its replay span and payer; its replays give no token and, with no failure believed, ' +
      'are paid in full',
    async () => {
      const honest = await rawSession(swarm)
      const attacker = await rawSession(swarm, NodeIdentity.generate(), true)
      try {
        const account = await swarm.tracker.accounts.byPublicKey(attacker.identity.publicKey)
        expect(attacker.hop.ticket?.replay).toEqual({
          span: [0, PROMPT.length + 16],
          escrowOf: attacker.hop.hostId,
          thenAccount: account?.accountId,
        })
        const plain = [
          await honest.step(PROMPT, 1, 0),
          await honest.step([13], 2, PROMPT.length),
          await honest.step([14], 3, PROMPT.length + 1),
        ]
        expect(plain.map((f) => f.kind)).toEqual(['token', 'token', 'token'])
        // a replay that asks for a token is refused: replays only rebuild a cache
        await expect(attacker.step(PROMPT, REPLAY_STEP_BASE, 0)).rejects.toMatchObject({ code: 'replay_samples' })
        const replays = [
          await attacker.step(PROMPT, REPLAY_STEP_BASE, 0, FLAG_NO_SAMPLE),
          await attacker.step([13], REPLAY_STEP_BASE + 1, PROMPT.length, FLAG_NO_SAMPLE),
          await attacker.step([14], REPLAY_STEP_BASE + 2, PROMPT.length + 1, FLAG_NO_SAMPLE),
        ]
        expect(replays.map((f) => f.kind)).toEqual(['ok', 'ok', 'ok'])
        // The "failed" host is the one routed again: the failure
        // is not believed, so the client pays the rebuild itself.
        const paidPlain = charged((await honest.submit(plain)).verdicts)
        const paidReplays = await attacker.submit(replays)
        expect(paidReplays.verdicts.every((v) => v.ok)).toBe(true)
        expect(paidPlain).toBeGreaterThan(0)
        expect(charged(paidReplays.verdicts)).toBe(paidPlain)
      } finally {
        await honest.close()
        await attacker.close()
      }
    },
  )

  it('serves a step number once: a re-run with another input is refused, the same one gets its answer', async () => {
    const attacker = await rawSession(swarm)
    try {
      const first = await attacker.step(PROMPT, 1, 0)
      expect(first.kind).toBe('token')
      const served: Frame[] = []
      for (let i = 0; i < 8; i++) {
        const other = attacker.step([1, 403 + i, 407, 261], 1, 0)
        await expect(other).rejects.toMatchObject({
          code: 'step_rerun_changed',
          message: expect.stringMatching(/served once/),
        })
        served.push(...(await other.then((f) => [f]).catch(() => [])))
      }
      expect(served).toEqual([])
      // a retry of the same step (a failover's) gets the same answer, and the session goes on
      const again = await attacker.step(PROMPT, 1, 0)
      expect(Buffer.from(again.payload).equals(Buffer.from(first.payload))).toBe(true)
      const token = JSON.parse(new TextDecoder().decode(first.payload)).token as number
      expect((await attacker.step([token], 2, PROMPT.length)).kind).toBe('token')
      await expect(attacker.step([token + 1], 2, PROMPT.length)).rejects.toMatchObject({ code: 'step_rerun_changed' })
    } finally {
      await attacker.close()
    }
  })

  it(
    'a failover plan tickets for rebuild only the live hops ' + 'of the session’s own route, never the failed host',
    async () => {
      const client = await rawSession(swarm)
      try {
        const plan = {
          modelId: swarm.manifest.modelId,
          maxTokens: PROMPT.length + 16,
          session: client.session,
          span: client.hop.blocks,
        }
        const failover = (rebuild: { hostId: string; blocks: [number, number] }[]) =>
          callRpc(client.tracker, ClientToTracker, 'route.plan', { ...plan, failedHost: client.hop.hostId, rebuild })
        const stranger = NodeIdentity.generate().id
        await expect(failover([{ hostId: stranger, blocks: [0, 5] }])).rejects.toMatchObject({ code: 'not_on_route' })
        await expect(failover([{ hostId: client.hop.hostId, blocks: [0, 5] }])).rejects.toMatchObject({
          code: 'not_on_route',
        })
      } finally {
        await client.close()
      }
    },
  )

  it(
    'a step out of order ("step 2" again, a skipped position) is refused as the client’s doing: no receipt, ' +
      'nothing counted against the host',
    async () => {
      const client = await rawSession(swarm)
      const rejectionsBefore = await swarm.tracker.store.ledger.rejections(client.hop.hostId)
      try {
        await client.step(PROMPT, 1, 0)
        await client.step([13], 2, PROMPT.length)
        const again = client.step([14], 2, PROMPT.length + 1)
        await expect(again).rejects.toBeInstanceOf(NeuronError)
        await expect(again).rejects.toMatchObject({
          code: 'step_out_of_order',
          message: expect.stringMatching(/takes step 3 at position 6 next/),
        })
        await expect(client.step([14], 4, PROMPT.length + 2)).rejects.toMatchObject({ code: 'step_out_of_order' })
        // in order, the session goes on
        expect((await client.step([14], 3, PROMPT.length + 1)).kind).toBe('token')
        expect(await swarm.tracker.store.ledger.rejections(client.hop.hostId)).toEqual(rejectionsBefore)
      } finally {
        await client.close()
      }
    },
  )

  it(
    'a host billing steps its client never sent (no client signature, or one it made itself) is paid nothing, and ' +
      'the client charged nothing',
    async () => {
      const client = await rawSession(swarm)
      const hostIdentity = await NodeIdentity.loadOrCreate(join(dir, 'host-0'))
      const host = await connectTracker(swarm.tracker.url, '/hosts', hostIdentity)
      try {
        const sent = await client.step(PROMPT, 1, 0)
        const { signature: _signature, client: _client, ...real } = readTrailer(sent, Receipt) as Receipt
        const phantom = (step: number, forge: boolean): Receipt => {
          const terms = {
            ...real,
            step,
            position: PROMPT.length + step - 2,
            tokens: 1,
            input: payloadSha256(randomBytes(16)),
            output: payloadSha256(randomBytes(16)),
          }
          // the host signing as the client, with its own key
          const body: ReceiptBody = forge ? { ...terms, client: hostIdentity.sign(stepMessage(terms)) } : terms
          return { ...body, signature: hostIdentity.sign(receiptMessage(body)) }
        }
        const bill = [phantom(2, false), phantom(3, false), phantom(4, true), phantom(5, true)]
        const account = await swarm.tracker.accounts.byPublicKey(client.identity.publicKey)
        if (account === undefined) throw new Error('the client has no account')
        const before = await swarm.tracker.accounts.balance(account.accountId)
        const { verdicts } = await callRpc(host, HostToTracker, 'receipts.submit', { receipts: bill })
        expect(verdicts.map((v) => [v.ok, v.code, v.charged])).toEqual(
          bill.map(() => [false, 'no_client_signature', 0]),
        )
        expect(await swarm.tracker.accounts.balance(account.accountId)).toBe(before)
        // the step the client did send is paid as usual
        expect((await client.submit([sent])).verdicts[0]).toMatchObject({ ok: true })
      } finally {
        host.close()
        await client.close()
      }
    },
  )
})
