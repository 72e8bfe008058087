// Speculative decoding end to end with real processes on loopback: a tracker, three hosts over stories260K, and a
// client whose draft proposes tokens that one verify step per round checks. Whatever the draft, the streamed greedy
// tokens must equal llama.cpp's; the hosts are paid for every position they checked.
import { join } from 'node:path'
import type { LlamaModel } from 'node-llama-cpp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type GenerateRequest, SwarmClient } from '../client/swarm-client'
import { packModel } from '../gguf/pack'
import { NodeIdentity } from '../identity/keys'
import { oracleGreedy, oracleModel } from '../native/oracle'
import type { Manifest, RouteHop } from '../protocol'
import { damagedCopy, foreignVocabularyModel } from './draft-models'
import { generateAll } from './generations'
import { STORIES_260K, scratchDir } from './models'
import { ProcessSwarm } from './processes'

const TOKENS = 48
let dir = ''
let cleanup: () => Promise<void> = async () => {}
let swarm: ProcessSwarm
let trackerUrl = ''
let manifest: Manifest
let oracle: number[] = []
let promptTokens: number[] = []
let damaged = ''

function generate(
  client: SwarmClient,
  draft: GenerateRequest['draft'],
  onToken?: (n: number, route: readonly RouteHop[]) => void,
) {
  return generateAll(
    client,
    { modelId: manifest.modelId, prompt: promptTokens, maxTokens: TOKENS, stopAtEog: false, draft },
    onToken,
  )
}

describe('speculative decoding across a swarm of real processes on loopback', () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed'), blocksPerArtifact: 2 })
    swarm = await ProcessSwarm.start(dir, manifest.modelId)
    trackerUrl = swarm.trackerUrl
    const model: LlamaModel = await oracleModel(STORIES_260K)
    promptTokens = [...model.tokenize('Once upon a time', true)]
    oracle = (await oracleGreedy(model, promptTokens, TOKENS, manifest.nVocab)).map((s) => s.token)
    await model.dispose()
    damaged = await damagedCopy(STORIES_260K, join(dir, 'damaged.gguf'), [1, 3])
    await Promise.all([
      swarm.startHost('host-a', '0:2'),
      swarm.startHost('host-b', '2:4'),
      swarm.startHost('host-c', '4:5'),
    ])
  }, 180_000)
  afterAll(async () => {
    await swarm?.stop()
    await cleanup()
  })

  it(
    'self-drafting gives llama.cpp’s greedy tokens, accepts every draft, takes fewer route steps than tokens, and ' +
      'pays each checked position',
    async () => {
      const client = await SwarmClient.connect(trackerUrl, NodeIdentity.generate())
      try {
        const { tokens, summary } = await generate(client, { path: STORIES_260K, k: 4 })
        expect(tokens).toEqual(oracle)
        const s = summary.speculation
        expect(s).toBeDefined()
        expect(s?.accepted).toBe(s?.drafted)
        // the prefill gives the first token; each verify step then
        // gives its k accepted drafts and the route's own token
        expect(s?.verifySteps).toBe(Math.ceil((TOKENS - 1) / 5))
        const steps = new Set(summary.receipts.map((r) => r.step))
        expect(steps.size).toBe(1 + (s?.verifySteps ?? 0))
        expect(steps.size).toBeLessThan(tokens.length)
        // every hop signed a receipt for every position it checked: the prompt, then k + 1 per verify step
        for (const blocks of [
          [0, 2],
          [2, 4],
          [4, 5],
        ]) {
          const hop = summary.receipts.filter((r) => r.blocks[0] === blocks[0])
          expect(hop.reduce((n, r) => n + r.tokens, 0)).toBe(
            promptTokens.length + (s?.verifySteps ?? 0) + (s?.drafted ?? 0),
          )
        }
        // the tracker pays them on the terms it routed (the hosts hand the same receipts in: settled once)
        const verdicts = await client.submitReceipts(summary.session, summary.receipts)
        for (const v of verdicts.verdicts)
          expect(v.ok || v.code === 'already_settled', `step ${v.step}: ${v.code}`).toBe(true)
        console.log(
          `self-draft: ${tokens.length} tokens in ${steps.size} route steps, acceptance ${s?.accepted}/${s?.drafted}`,
        )
      } finally {
        await client.close()
      }
    },
  )

  it('a draft with the same vocabulary that predicts worse still gives exactly llama.cpp’s greedy tokens', async () => {
    const client = await SwarmClient.connect(trackerUrl, NodeIdentity.generate())
    try {
      const { tokens, summary } = await generate(client, { path: damaged, k: 4 })
      expect(tokens).toEqual(oracle)
      const s = summary.speculation
      expect(s?.accepted).toBeLessThan(s?.drafted ?? 0)
      console.log(`damaged draft: acceptance ${s?.accepted}/${s?.drafted} over ${s?.verifySteps} verify steps`)
    } finally {
      await client.close()
    }
  })

  it('refuses a draft with another vocabulary, and sampling with a draft, before any route is planned', async () => {
    const foreign = await foreignVocabularyModel(join(dir, 'foreign.gguf'), manifest.nVocab)
    const client = await SwarmClient.connect(trackerUrl, NodeIdentity.generate())
    try {
      await expect(generate(client, { path: foreign })).rejects.toMatchObject({ code: 'draft_vocabulary_mismatch' })
      const sampled = client.generate({
        modelId: manifest.modelId,
        prompt: promptTokens,
        maxTokens: 4,
        sampling: { temperature: 0.7 },
        draft: { path: STORIES_260K },
      })
      await expect(sampled.next()).rejects.toMatchObject({ code: 'speculation_greedy_only' })
    } finally {
      await client.close()
    }
  })

  it(
    'survives a host killed mid-generation with a draft: the replacement replays the accepted positions and the ' +
      'tokens still equal llama.cpp’s',
    async () => {
      const spare = await swarm.startHost('host-spare', '2:4')
      const hostB = swarm.processes.find((p) => / ready blocks \[2, 4\)/.test(p.output()) && p !== spare)
      const client = await SwarmClient.connect(trackerUrl, NodeIdentity.generate())
      try {
        let killed = ''
        const { tokens, summary } = await generate(client, { path: damaged, k: 4 }, (n, route) => {
          if (n !== 20 || killed !== '') return
          const onRoute = route.find((h) => h.blocks[0] === 2)?.hostId ?? ''
          const victim = [hostB, spare].find((p) => p?.output().includes(onRoute))
          killed = onRoute
          victim?.child.kill('SIGKILL')
        })
        expect(killed).not.toBe('')
        expect(tokens).toEqual(oracle)
        expect(summary.failovers.map((f) => [f.hostId, f.blocks])).toEqual([[killed, [2, 4]]])
      } finally {
        await client.close()
      }
    },
  )
})
