// A model with recurrent state (qwen35moe: gated delta-net blocks keep a fixed-size state per session
// that cannot be rolled back) in the swarm on loopback: three hosts on an uneven split stream
// node-llama-cpp's greedy tokens, and when the middle hop stops mid-generation the spare that takes
// its span rebuilds the state by replaying the session from position 0: the tokens do not change.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { generateModel } from '../gguf/generate'
import type { Host } from '../host/host'
import { NodeIdentity } from '../identity/keys'
import { oracleGreedy, oracleModel } from '../native/oracle'
import type { RouteHop } from '../protocol'
import { scratchDir } from './models'
import { type InProcessSwarm, startSwarm } from './programs'

// blocks 0–2 are delta-net, block 3 full attention (llama.cpp's interval of 4)
const SHAPE = {
  arch: 'qwen35moe',
  blocks: 4,
  embd: 256,
  heads: 4,
  kvHeads: 2,
  ff: 256,
  vocab: 384,
  experts: 8,
  expertsUsed: 2,
  expertFf: 256,
  seed: 1,
} as const
const PROMPT = [1, 17, 42, 99, 7, 64, 300]
const TOKENS = 32
const STOP_AFTER = 12

describe('a qwen35moe model (recurrent state) in the swarm, with a failover', () => {
  let scratch: { dir: string; cleanup: () => Promise<void> }
  let swarm: InProcessSwarm
  let oracle: number[] = []
  beforeAll(async () => {
    scratch = await scratchDir('neuron-recurrent-swarm-')
    const model = join(scratch.dir, 'qwen35moe.gguf')
    await generateModel({ ...SHAPE, type: 'q8_0', out: model })
    const llama = await oracleModel(model)
    oracle = (await oracleGreedy(llama, PROMPT, TOKENS, SHAPE.vocab)).map((s) => s.token)
    await llama.dispose()
    swarm = await startSwarm(scratch.dir, model, [
      [0, 1],
      [1, 3],
      [3, 4],
      [1, 3],
    ])
  }, 180_000)
  afterAll(async () => {
    await swarm?.close()
    await scratch?.cleanup()
  })

  it('streams llama.cpp’s greedy tokens; a middle hop stopped mid-generation is replaced and replayed from 0, tokens unchanged', async () => {
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    try {
      let route: readonly RouteHop[] = []
      let stopped = ''
      const tokens: number[] = []
      const run = client.generate({
        modelId: swarm.manifest.modelId,
        prompt: PROMPT,
        maxTokens: TOKENS,
        stopAtEog: false,
        onRoute: (hops) => (route = hops),
      })
      let next = await run.next()
      for (; !next.done; next = await run.next()) {
        tokens.push(next.value.token)
        if (tokens.length === STOP_AFTER) {
          stopped = route.find((h) => h.blocks[0] === 1)?.hostId ?? ''
          await (swarm.hosts.find((h) => (h as Host).hostId === stopped) as Host).stop(0)
        }
      }
      expect(next.value.failovers.map((f) => [f.hostId, f.blocks])).toEqual([[stopped, [1, 3]]])
      expect(route.map((h) => h.blocks)).toEqual([
        [0, 1],
        [1, 3],
        [3, 4],
      ])
      expect(stopped).not.toBe('')
      expect(route.find((h) => h.blocks[0] === 1)?.hostId).not.toBe(stopped)
      expect(tokens).toEqual(oracle)
    } finally {
      client.close()
    }
  }, 120_000)
})
