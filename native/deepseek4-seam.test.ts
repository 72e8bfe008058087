// deepseek4's seam (models: test/deepseek4-models.ts): four hyper-connection streams per token, and the token ids
// a hash-routed block needs; bad seam input is refused before compute.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { deepseek4Models, HC, SHAPE } from '../test/deepseek4-models'
import { logitsOf } from '../test/native'
import { ShardRuntime } from './shard-runtime'

let cleanup: () => Promise<void> = async () => {}
let prompt: number[] = []
let paths: Record<string, string> = {}

beforeAll(async () => {
  ;({ cleanup, prompt, paths } = await deepseek4Models(['q8_0']))
}, 120_000)
afterAll(() => cleanup())

describe('deepseek4: the seam', () => {
  it('states its widths and token ids per hop, and refuses bad seam input with a typed error before ' +
    'compute', async () => {
    const path = paths.q8_0 as string
    const load = (blocks: [number, number]) =>
      ShardRuntime.load({
        artifacts: [path],
        blocks,
        embed: blocks[0] === 0,
        head: blocks[1] === SHAPE.blocks,
        threads: 1,
        device: 'cpu',
      })
    const [first, second, third] = await Promise.all([load([0, 1]), load([1, 3]), load([3, 4])])
    try {
      const a = first.openSession({ maxTokens: 64 })
      const b = second.openSession({ maxTokens: 64 })
      const c = third.openSession({ maxTokens: 64 })
      expect([a.inputWidth, a.outputWidth, b.inputWidth, c.inputWidth]).toEqual([
        HC * SHAPE.embd,
        HC * SHAPE.embd,
        HC * SHAPE.embd,
        HC * SHAPE.embd,
      ])
      // block 1 routes by token id; block 3 does not; the first hop has the ids already
      expect([a.needsTokenIds, b.needsTokenIds, c.needsTokenIds]).toEqual([false, true, false])
      expect([a.indicesIn, a.indicesOut, b.indicesIn, c.indicesOut]).toEqual([0, 0, 0, 0])
      await expect(a.forward(Int32Array.from(prompt), { tokenIds: Int32Array.from(prompt) })).rejects.toMatchObject({
        code: 'TOKEN_IDS_UNEXPECTED',
      })
      const out = await a.forward(Int32Array.from(prompt))
      expect(out).toMatchObject({ kind: 'hidden', rows: prompt.length, cols: HC * SHAPE.embd })
      const hidden = out.data as Float32Array
      const ids = Int32Array.from(prompt)
      await expect(b.forward(hidden)).rejects.toMatchObject({
        code: 'TOKEN_IDS_SIZE',
        details: { got: 0, expected: prompt.length },
      })
      await expect(b.forward(hidden, { tokenIds: ids.subarray(1) })).rejects.toMatchObject({ code: 'TOKEN_IDS_SIZE' })
      await expect(
        b.forward(hidden, { tokenIds: Int32Array.from(prompt, (t, i) => (i === 3 ? SHAPE.vocab : t)) }),
      ).rejects.toMatchObject({
        code: 'TOKEN_OUT_OF_RANGE',
        details: { index: 3, token: SHAPE.vocab },
      })
      await expect(b.forward(hidden, { tokenIds: Int32Array.from(prompt, () => -1) })).rejects.toMatchObject({
        code: 'TOKEN_OUT_OF_RANGE',
      })
      // one stream's width (n_embd) per token is not a deepseek4 hidden state
      await expect(
        b.forward(hidden.subarray(0, prompt.length * SHAPE.embd + 1), { tokenIds: ids }),
      ).rejects.toMatchObject({ code: 'HIDDEN_SIZE' })
      await expect(b.forward(hidden, { tokenIds: ids, indices: new Int32Array(prompt.length) })).rejects.toMatchObject({
        code: 'BAD_INDICES',
      })
      await expect(c.forward(hidden, { tokenIds: ids })).rejects.toMatchObject({ code: 'TOKEN_IDS_UNEXPECTED' })
      // nothing was computed: both hops go on from position 0
      expect([b.nPast, c.nPast]).toEqual([0, 0])
      const mid = await b.forward(hidden, { tokenIds: ids })
      expect(mid).toMatchObject({ kind: 'hidden', cols: HC * SHAPE.embd })
      const logits = logitsOf(await c.forward(mid.data as Float32Array))
      expect(logits.length).toBe(SHAPE.vocab)
      for (const s of [a, b, c]) s.close()
    } finally {
      for (const rt of [first, second, third]) rt.dispose()
    }
  }, 60_000)
})
