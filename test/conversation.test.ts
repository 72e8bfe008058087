// A conversation's turns keep their cache (issue 35): the next turn sends only the tokens after those its session's
// hops hold, on the same session, ticketed by route.turn. A real tracker and two hosts of stories260K on loopback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import { ClientToTracker, callRpc } from '../protocol'
import { drain } from './generations'
import { STORIES_260K, scratchDir } from './models'
import { type InProcessSwarm, startSwarm } from './programs'

const TOKENS = 12

let scratch: { dir: string; cleanup: () => Promise<void> }
let swarm: InProcessSwarm

beforeAll(async () => {
  scratch = await scratchDir('neuron-conversation-')
  // two hosts of [3, 5): one can go away between turns
  swarm = await startSwarm(scratch.dir, STORIES_260K, [
    [0, 3],
    [3, 5],
    [3, 5],
  ])
}, 120_000)

afterAll(async () => {
  await swarm?.close()
  await scratch?.cleanup()
})

/** A new client of the swarm, the model's id and tokenizer, and a conversation reserving 256 positions. */
async function converse() {
  const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
  const modelId = swarm.manifest.modelId
  const tokenizer = await client.tokenizer(modelId)
  return { client, modelId, tokenizer, conversation: client.conversation({ positions: 256 }) }
}

describe('a conversation', () => {
  it('sends its second turn’s new tokens alone, on the same session, and answers as a fresh session does', async () => {
    const { client, modelId, tokenizer, conversation } = await converse()
    try {
      const first = tokenizer.encode('Once upon a time, there was a little girl')
      const one = await drain(conversation.turn({ modelId, prompt: first, maxTokens: TOKENS, stopAtEog: false }))
      expect(one.summary.cachedTokens).toBe(0)
      // the next prompt: the whole conversation so far, and more
      const second = [...first, ...one.tokens, ...tokenizer.encode(' She liked to play').slice(first[0] === 1 ? 1 : 0)]
      const two = await drain(conversation.turn({ modelId, prompt: second, maxTokens: TOKENS, stopAtEog: false }))
      // the hops held the first prompt and every answer token but the last (sampled, never sent): only the rest went
      const held = first.length + one.tokens.length - 1
      expect(two.summary.session).toBe(one.summary.session)
      expect(two.summary.cachedTokens).toBe(held)
      const turnStep = two.summary.receipts.filter((r) => r.position === held)
      expect(turnStep).toHaveLength(2)
      for (const r of turnStep) expect(r.tokens).toBe(second.length - held)
      expect(two.summary.receipts.every((r) => r.position >= held)).toBe(true)
      // the tracker prices the turn's first step as a prompt and every step of it at its position
      const verdicts = (await client.submitReceipts(two.summary.session, two.summary.receipts)).verdicts
      expect(verdicts.filter((v) => !v.ok && v.code !== 'already_settled')).toEqual([])
      // greedy: the same answer as a new session given the whole prompt
      const fresh = await drain(client.generate({ modelId, prompt: second, maxTokens: TOKENS, stopAtEog: false }))
      expect(two.tokens).toEqual(fresh.tokens)
    } finally {
      await conversation.close()
      client.close()
    }
  }, 120_000)

  it('goes on from an edit in the middle: the hops roll back to where the prompts part', async () => {
    const { client, modelId, tokenizer, conversation } = await converse()
    try {
      const first = tokenizer.encode('Once upon a time, there was a little girl')
      const one = await drain(conversation.turn({ modelId, prompt: first, maxTokens: 4, stopAtEog: false }))
      const edited = tokenizer.encode('Once upon a time, a dog ran to the park')
      let shared = 0
      while (first[shared] === edited[shared]) shared++
      expect(shared).toBeGreaterThan(1)
      expect(shared).toBeLessThan(first.length)
      const two = await drain(conversation.turn({ modelId, prompt: edited, maxTokens: 8, stopAtEog: false }))
      expect(two.summary.session).toBe(one.summary.session)
      expect(two.summary.cachedTokens).toBe(shared)
      const fresh = await drain(client.generate({ modelId, prompt: edited, maxTokens: 8, stopAtEog: false }))
      expect(two.tokens).toEqual(fresh.tokens)
    } finally {
      await conversation.close()
      client.close()
    }
  }, 120_000)
})

describe('route.turn refuses', () => {
  it('a session the caller was not routed, and a turn past the positions it reserved', async () => {
    const owner = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    const other = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    const modelId = swarm.manifest.modelId
    const conversation = owner.conversation({ positions: 64 })
    try {
      const one = await drain(
        conversation.turn({ modelId, prompt: 'Once upon a time', maxTokens: 4, stopAtEog: false }),
      )
      const session = one.summary.session
      const hops = one.summary.route.map((h) => ({ hostId: h.hostId, blocks: h.blocks }))
      const turn = { step: 10, position: 9, tokens: 3 }
      await expect(
        callRpc(other.tracker, ClientToTracker, 'route.turn', { session, turn, hops }),
      ).rejects.toMatchObject({
        code: 'unknown_session',
      })
      await expect(
        callRpc(owner.tracker, ClientToTracker, 'route.turn', { session, turn: { ...turn, tokens: 60 }, hops }),
      ).rejects.toMatchObject({ code: 'turn_too_long' })
      await expect(
        callRpc(owner.tracker, ClientToTracker, 'route.turn', {
          session,
          turn,
          hops: [{ hostId: 'f'.repeat(20), blocks: [0, 3] }],
        }),
      ).rejects.toMatchObject({ code: 'not_on_route' })
    } finally {
      await conversation.close()
      owner.close()
      other.close()
    }
  }, 120_000)
})

describe('a conversation whose session is gone', () => {
  it('starts its next turn anew when a hop was given up or killed between turns, and answers as before', async () => {
    const { client, modelId, tokenizer, conversation } = await converse()
    try {
      const first = tokenizer.encode('Once upon a time, there was a big dog')
      const one = await drain(conversation.turn({ modelId, prompt: first, maxTokens: 8, stopAtEog: false }))
      const second = [...first, ...one.tokens]
      // the route's [3, 5) hop goes away; the other host of [3, 5) is there
      const gone = one.summary.route.at(-1)?.hostId
      await swarm.hosts.find((h) => h.hostId === gone)?.stop(0)
      const two = await drain(conversation.turn({ modelId, prompt: second, maxTokens: 8, stopAtEog: false }))
      expect(two.summary.cachedTokens).toBe(0)
      expect(two.summary.session).not.toBe(one.summary.session)
      expect(two.summary.route.at(-1)?.hostId).not.toBe(gone)
      const fresh = await drain(client.generate({ modelId, prompt: second, maxTokens: 8, stopAtEog: false }))
      expect(two.tokens).toEqual(fresh.tokens)
    } finally {
      await conversation.close()
      client.close()
    }
  }, 120_000)
})
