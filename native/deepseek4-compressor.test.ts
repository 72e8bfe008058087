// deepseek4's compressor state (models: test/deepseek4-models.ts): rollback refused except a replay from 0, and
// the caches' bytes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { describeModel } from '../gguf/model'
import { readGguf } from '../gguf/reader'
import { blockCacheBytes } from '../protocol/cache-cost'
import { deepseek4Models, SHAPE } from '../test/deepseek4-models'
import { logitsOf, RuntimePool } from '../test/native'
import { ShardRuntime } from './shard-runtime'
import type { ShardSession } from './shard-session'

let cleanup: () => Promise<void> = async () => {}
let prompt: number[] = []
let paths: Record<string, string> = {}

beforeAll(async () => {
  ;({ cleanup, prompt, paths } = await deepseek4Models(['q8_0']))
}, 120_000)
afterAll(() => cleanup())

describe('deepseek4: the compressor state', () => {
  /** Prompt then `steps` greedy tokens through a route, returning the tokens and the last logits. */
  async function run(sessions: ShardSession[], input: number[], steps: number, start?: number) {
    const tokens: number[] = []
    let ids = Int32Array.from(input)
    let logits: Float32Array = new Float32Array()
    for (let step = 0; step <= steps; step++) {
      let x: Int32Array | Float32Array | Uint16Array = ids
      for (const s of sessions) {
        const out = await s.forward(x, {
          ...(step === 0 && start !== undefined ? { positions: start } : {}),
          ...(s.needsTokenIds ? { tokenIds: ids } : {}),
        })
        if (out.kind === 'logits') logits = logitsOf(out)
        else x = out.data
      }
      if (step === steps) break
      const token = (sessions[sessions.length - 1] as ShardSession).sample({ temperature: 0 }).token
      tokens.push(token)
      ids = Int32Array.of(token)
    }
    return { tokens, logits }
  }

  it('a replay from position 0 after other work gives exactly a fresh session’s logits and tokens', async () => {
    const pool = new RuntimePool(() => [paths.q8_0 as string], SHAPE.blocks)
    try {
      const open = async () => [
        (await pool.get([0, 2])).openSession({ maxTokens: 128 }),
        (await pool.get([2, 4])).openSession({ maxTokens: 128 }),
      ]
      const fresh = await open()
      const expected = await run(fresh, prompt, 20)
      const reused = await open()
      await run(reused, [...prompt].reverse(), 30) // other history in the compressors' state
      const replayed = await run(reused, prompt, 20, 0)
      expect(replayed.tokens).toEqual(expected.tokens)
      expect(Array.from(replayed.logits)).toEqual(Array.from(expected.logits))
      for (const s of reused) s.truncate(0)
      expect(await run(reused, prompt, 20)).toEqual(replayed)
      for (const s of [...fresh, ...reused]) s.close()
    } finally {
      await pool.dispose()
    }
  }, 120_000)

  it('refuses to roll back a compressing block with RECURRENT_ROLLBACK; a window-only block rolls back within ' +
    'its ring', async () => {
    const runtime = await ShardRuntime.load({
      artifacts: [paths.q8_0 as string],
      blocks: [0, 4],
      embed: true,
      head: true,
      threads: 1,
      device: 'cpu',
    })
    try {
      const session = runtime.openSession({ maxTokens: 64 })
      await session.forward(Int32Array.from(prompt))
      await session.forward(Int32Array.of(5, 6, 7))
      const n = session.nPast
      await expect(session.forward(Int32Array.of(9), { positions: n - 1 })).rejects.toMatchObject({
        code: 'RECURRENT_ROLLBACK',
        details: { position: n - 1, nPast: n },
        message: expect.stringMatching(/compressor state.*replay the session from position 0/),
      })
      expect(() => session.truncate(n - 2)).toThrow(
        expect.objectContaining({ code: 'RECURRENT_ROLLBACK', details: { to: n - 2, nPast: n } }),
      )
      expect(session.nPast).toBe(n)
      expect((await session.forward(Int32Array.of(9))).kind).toBe('logits')
      session.close()

      // block 0 keeps only its sliding window's keys (compress ratio 0): it rolls back like any window
      const window = runtime.openSession({ maxTokens: 64, blocks: [0, 1] })
      await window.forward(Int32Array.from(prompt))
      await window.forward(Int32Array.of(9), { positions: 3 })
      expect(window.nPast).toBe(4)
      window.truncate(1)
      window.close()
    } finally {
      runtime.dispose()
    }
  }, 60_000)

  it('each block’s cache bytes are what gguf/block-cache.ts states for the family', async () => {
    const path = paths.q8_0 as string
    const layout = describeModel(await readGguf(path))
    const runtime = await ShardRuntime.load({
      artifacts: [path],
      blocks: [0, 4],
      embed: true,
      head: true,
      threads: 1,
      device: 'cpu',
    })
    try {
      for (const tokens of [256, 1024]) {
        const s = runtime.openSession({ maxTokens: tokens })
        expect(s.kvBytesPerBlock, `${tokens} tokens`).toEqual(
          layout.cachePerBlock.map((cache) => blockCacheBytes(cache, { tokens, sessions: 1 })),
        )
        s.close()
      }
      // by hand, at 1024 positions: a ring of 768 f16 keys of 64, then 256 compressed keys (+ 256 indexer keys of 64)
      // and f32 state of 2 x 8 rows x 2 x 64 (+ the indexer's) at ratio 4, 8 keys and 2 x 128 x 64 state at ratio 128
      const head = SHAPE.embd / SHAPE.heads
      const ring = 768 * head * 2
      const ratio4 = ring + 2 * (256 * head * 2) + 2 * (2 * 8 * 2 * head * 4)
      const ratio128 = ring + 8 * head * 2 + 2 * 128 * head * 4
      const s = runtime.openSession({ maxTokens: 1024 })
      expect(s.kvBytesPerBlock).toEqual([ring, ratio4, ratio128, ratio4])
      s.close()
    } finally {
      runtime.dispose()
    }
  })
})
