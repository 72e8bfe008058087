import { afterEach, describe, expect, it } from 'vitest'
import { greedy, STORIES } from '../test/native'
import { ShardRuntime } from './shard-runtime'
import type { ShardSession } from './shard-session'

const PROMPT = Int32Array.of(1, 403, 407, 31, 261, 31) // "Once upon a time" with BOS

const load = (threads: number) =>
  ShardRuntime.load({ artifacts: [STORIES], blocks: [0, 5], embed: true, head: true, threads, device: 'cpu' })

/** The session's greedy story from PROMPT, then closed. */
async function story(s: ShardSession, n: number): Promise<number[]> {
  try {
    return await greedy(s, PROMPT, n)
  } finally {
    s.close()
  }
}

const saved = process.env.NEURON_NO_THREADPOOL
afterEach(() => {
  if (saved === undefined) delete process.env.NEURON_NO_THREADPOOL
  else process.env.NEURON_NO_THREADPOOL = saved
})

// 2 threads on a 2-core machine: more would oversubscribe it (the README's threads note)
describe(`the CPU thread pool kept between graphs`, () => {
  it(
    '2 threads with the kept pool, and without it, write the 1-thread greedy story; a disposed runtime leaves the ' +
      'other serving',
    async () => {
      const one = await load(1)
      expect(one.info().threadPool).toBe(false) // one thread needs no pool
      const solo = await story(one.openSession({ maxTokens: 96 }), 40)
      one.dispose()

      delete process.env.NEURON_NO_THREADPOOL
      const pooled = await load(2)
      const other = await load(2)
      process.env.NEURON_NO_THREADPOOL = '1'
      const perGraph = await load(2)
      try {
        expect(pooled.info().threadPool).toBe(true)
        expect(perGraph.info().threadPool).toBe(false)
        // stories260K's matmuls split across threads by rows: the same sums, so the same greedy tokens
        expect(await story(pooled.openSession({ maxTokens: 96 }), 40)).toEqual(solo)
        expect(await story(perGraph.openSession({ maxTokens: 96 }), 40)).toEqual(solo)
        // two pools at once, one freed mid-chat: the other's threads are its own
        const a = other.openSession({ maxTokens: 96 })
        const running = story(a, 40)
        pooled.dispose()
        expect(await running).toEqual(solo)
      } finally {
        pooled.dispose()
        other.dispose()
        perGraph.dispose()
      }
    },
  )
})
