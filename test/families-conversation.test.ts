// A conversation's next turn on every family the swarm serves (issue 35): the hops keep the session's cache, the turn
// sends only its new tokens, and the answer is a fresh session's, token for token; then, with a hop killed between
// turns, the turn after starts anew on the spare and answers as before; and a turn edited in the middle goes on from
// the edit where the family's hops can roll back, else anew, with a fresh session's answer; and a chat with a draft
// answers as one without, where the hops roll a verify step back. stories260K (llama) is conversation.test.ts's; here
// the other families, generated small: plain KV caches (qwen3, qwen3moe), MLA (deepseek2), MLA with the lightning
// indexer's top-k crossing the cut (glm-dsa), sliding-window rings of 8 (gpt-oss), delta-net state (qwen35moe), and
// hyper-connection streams with compressed caches (deepseek4). A real tracker and three hosts on loopback.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { type GenerateOptions, generateModel } from '../gguf/generate'
import { NodeIdentity } from '../identity/keys'
import { drain } from './generations'
import { scratchDir } from './models'
import { type InProcessSwarm, startSwarm } from './programs'

const DENSE = { embd: 128, heads: 4, kvHeads: 2, ff: 256, vocab: 384, seed: 3, type: 'q8_0', blocks: 4 } as const
const COMMON = { ...DENSE, experts: 8, expertsUsed: 2, expertFf: 128 } as const

/**
 * Each family's shape; whether its hops roll their cache back to any earlier position, so that an edit in the middle
 * goes on from it (protocol/families.ts ROLLBACK_ARCHS: caches kept per position, plain K and V or glm-dsa's indexer
 * keys; the host's renew asks ShardRuntime.canRollBack); and whether they roll back a verify step's rejected drafts
 * (all but the recurrent and compressor states of UNROLLABLE_ARCHS; gpt-oss's sliding windows keep enough slack).
 */
const FAMILIES: Record<string, { shape: Omit<GenerateOptions, 'out'>; rollsBack: boolean; drafts: boolean }> = {
  qwen3: { shape: { ...DENSE, arch: 'qwen3' }, rollsBack: true, drafts: true },
  qwen3moe: { shape: { ...COMMON, arch: 'qwen3moe' }, rollsBack: true, drafts: true },
  deepseek2: {
    shape: { ...COMMON, arch: 'deepseek2', kvHeads: 1, kvLoraRank: 64, ropeDim: 16, nopeDim: 32 },
    rollsBack: true,
    drafts: true,
  },
  'glm-dsa': {
    shape: { ...COMMON, arch: 'glm-dsa', kvHeads: 1, fullIndexerInterval: 3, indexerTopK: 8 },
    rollsBack: true,
    drafts: true,
  },
  'gpt-oss': { shape: { ...COMMON, arch: 'gpt-oss', slidingWindow: 8 }, rollsBack: false, drafts: true },
  qwen35moe: { shape: { ...COMMON, arch: 'qwen35moe' }, rollsBack: false, drafts: false },
  deepseek4: {
    shape: { ...COMMON, arch: 'deepseek4', kvHeads: 1, compressRatios: [0, 4, 128, 4], slidingWindow: 8 },
    rollsBack: false,
    drafts: false,
  },
}
const FIRST = [17, 42, 99, 7, 64, 200, 31, 5]
const MORE = [120, 121, 122, 9]
const TOKENS = 10

describe.each(Object.entries(FAMILIES))('a conversation on %s', (arch, { shape, rollsBack, drafts }) => {
  let scratch: { dir: string; cleanup: () => Promise<void> }
  let swarm: InProcessSwarm
  let client: SwarmClient
  let draft = ''

  beforeAll(async () => {
    scratch = await scratchDir(`neuron-${arch}-conversation-`)
    const model = join(scratch.dir, `${arch}.gguf`)
    await generateModel({ ...shape, out: model })
    // another seed of the same shape and vocabulary: its drafts are mostly wrong, so verify steps roll back
    draft = join(scratch.dir, `${arch}-draft.gguf`)
    await generateModel({ ...shape, seed: shape.seed + 100, out: draft })
    // [2, 4) twice: one of them can be killed between turns
    swarm = await startSwarm(scratch.dir, model, [
      [0, 2],
      [2, 4],
      [2, 4],
    ])
    client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
  }, 240_000)

  afterAll(async () => {
    client?.close()
    await swarm?.close()
    await scratch?.cleanup()
  })

  const ask = (prompt: number[]) => ({ modelId: swarm.manifest.modelId, prompt, maxTokens: TOKENS, stopAtEog: false })

  const how = rollsBack ? 'from the edit: its hops roll back there' : 'anew: its hops cannot roll back'
  it(`edited in the middle, goes on ${how}, and answers as a fresh session`, async () => {
    const conversation = client.conversation({ positions: 128 })
    try {
      const one = await drain(conversation.turn(ask(FIRST)))
      const edited = [...FIRST.slice(0, 4), 250, 251, 252]
      const two = await drain(conversation.turn(ask(edited)))
      expect(two.summary.session === one.summary.session).toBe(rollsBack)
      expect(two.summary.cachedTokens).toBe(rollsBack ? 4 : 0)
      const fresh = await drain(client.generate(ask(edited)))
      expect(two.tokens).toEqual(fresh.tokens)
    } finally {
      await conversation.close()
    }
  }, 120_000)

  it(drafts
    ? 'with a draft, answers as without one: each verify step rolled back past its rejected drafts'
    : 'refuses a draft before any route: its hops cannot roll back a verify step', async () => {
    const request = { ...ask(FIRST), draft: { path: draft, k: 3 } }
    if (!drafts) {
      await expect(drain(client.generate(request))).rejects.toMatchObject({ code: 'speculation_unsupported' })
      return
    }
    const drafted = await drain(client.generate(request))
    const plain = await drain(client.generate(ask(FIRST)))
    expect(drafted.tokens).toEqual(plain.tokens)
    const stats = drafted.summary.speculation
    expect(stats?.verifySteps).toBeGreaterThan(0)
    // drafts were refused, so the hops rolled back after verify steps
    expect(stats?.accepted).toBeLessThan(stats?.drafted ?? 0)
  }, 120_000)

  it('its second turn sends only its new tokens on the same session and answers as a fresh session; after a hop is ' +
    'killed, the third starts anew and answers as before', async () => {
    const conversation = client.conversation({ positions: 128 })
    try {
      const one = await drain(conversation.turn(ask(FIRST)))
      expect(one.summary.cachedTokens).toBe(0)
      const second = [...FIRST, ...one.tokens, ...MORE]
      const two = await drain(conversation.turn(ask(second)))
      // the hops held the first prompt and every answer token but the last (sampled, never sent)
      expect(two.summary.session).toBe(one.summary.session)
      expect(two.summary.cachedTokens).toBe(FIRST.length + TOKENS - 1)
      const fresh = await drain(client.generate(ask(second)))
      expect(fresh.summary.cachedTokens).toBe(0)
      expect(two.tokens).toEqual(fresh.tokens)

      // the route's [2, 4) hop goes away; the spare takes the next turn, which prefills the whole conversation
      const third = [...second, ...two.tokens, ...MORE]
      const gone = two.summary.route.at(-1)?.hostId
      await swarm.hosts.find((h) => h.hostId === gone)?.stop(0)
      const three = await drain(conversation.turn(ask(third)))
      expect(three.summary.cachedTokens).toBe(0)
      expect(three.summary.session).not.toBe(two.summary.session)
      expect(three.summary.route.at(-1)?.hostId).not.toBe(gone)
      const again = await drain(client.generate(ask(third)))
      expect(three.tokens).toEqual(again.tokens)
    } finally {
      await conversation.close()
    }
  }, 180_000)
})
