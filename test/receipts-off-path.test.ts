// The receipts a generation hands its caller (`onReceipts`: the app submits them to its tracker) travel beside the
// tokens, not in front of them: awaited per step, a tracker across the internet added its round trip to every token.
// A real tracker and host of stories260K on loopback; the caller's handler is held until the test lets it go.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import type { Receipt } from '../protocol'
import { STORIES_260K, scratchDir } from './models'
import { type InProcessSwarm, startSwarm } from './programs'

const TOKENS = 8
/** How long the tokens may take to stream while the handler is held: a bound on a hang, not a speed. */
const STREAM_BOUND_MS = 60_000

let scratch: { dir: string; cleanup: () => Promise<void> }
let swarm: InProcessSwarm

beforeAll(async () => {
  scratch = await scratchDir('neuron-receipts-off-path-')
  swarm = await startSwarm(scratch.dir, STORIES_260K, [[0, 5]])
}, 120_000)

afterAll(async () => {
  await swarm?.close()
  await scratch?.cleanup()
})

describe("a generation's receipts handed to its caller", () => {
  it('stream every token while the caller is still taking the first step’s receipts, in order, and the summary ' +
    'waits for them all', async () => {
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    const taken: Receipt[][] = []
    const run = client.generate({
      modelId: swarm.manifest.modelId,
      prompt: 'Once upon a time',
      maxTokens: TOKENS,
      stopAtEog: false,
      onReceipts: async (_, receipts) => {
        await held
        taken.push([...receipts])
      },
    })
    try {
      const streamed = (async () => {
        const tokens: number[] = []
        for (let i = 0; i < TOKENS; i++) {
          const next = await run.next()
          if (next.done) break
          tokens.push(next.value.token)
        }
        return tokens
      })()
      const bound = new Promise<'held'>((resolve) => setTimeout(() => resolve('held'), STREAM_BOUND_MS).unref())
      const tokens = await Promise.race([streamed, bound])
      // every token came while the caller had taken nothing yet
      expect(tokens).toHaveLength(TOKENS)
      expect(taken).toHaveLength(0)
      release()
      const done = await run.next()
      expect(done.done).toBe(true)
      // one call per step, in the steps' order, all of them before the summary
      expect(taken.map((r) => r[0]?.step)).toEqual(Array.from({ length: TOKENS }, (_, i) => i + 1))
      if (done.done) expect(done.value.receipts).toHaveLength(TOKENS)
    } finally {
      release()
      await client.close()
    }
  }, 120_000)
})
