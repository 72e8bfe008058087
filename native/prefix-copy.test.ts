// A session starting from a copy of another's first positions (a host's prefix cache, issue 35) on every family the
// runtime holds plain per-position K and V for, generated models split at a seam: it goes on exactly as a session that
// ran those positions itself in the same batch shapes. Families with sliding windows or recurrent states refuse it.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type GeneratedArch, generateModel } from '../gguf/generate'
import { PLAIN_KV_ARCHS } from '../protocol'
import { scratchDir } from '../test/models'
import { THREADS } from '../test/native'
import { ShardRuntimeError } from './errors'
import { ShardRuntime } from './shard-runtime'

const SHAPE = { blocks: 4, embd: 256, heads: 4, kvHeads: 2, ff: 512, vocab: 384, seed: 7 }
const MOE = { experts: 8, expertsUsed: 2 }
const EXTRA: Partial<Record<GeneratedArch, object>> = {
  qwen3moe: { ...MOE, expertFf: 256 },
  mixtral: MOE,
  deepseek2: { ...MOE, expertFf: 256 },
  'gpt-oss': { ...MOE, expertFf: 256, slidingWindow: 8 },
  qwen35moe: { ...MOE, expertFf: 256 },
}
const PROMPT = Int32Array.from({ length: 24 }, (_, i) => (i * 37 + 11) % SHAPE.vocab)
const OTHER = Int32Array.from({ length: 6 }, (_, i) => (i * 53 + 5) % SHAPE.vocab)

let dir = ''
let cleanup: () => Promise<void> = async () => {}
beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir('neuron-prefix-copy-'))
})
afterAll(() => cleanup())

async function halves(arch: GeneratedArch) {
  const path = join(dir, `${arch}.gguf`)
  await generateModel({ ...SHAPE, ...EXTRA[arch], arch, type: 'f16', out: path })
  const load = (blocks: [number, number]) =>
    ShardRuntime.load({
      artifacts: [path],
      blocks,
      embed: blocks[0] === 0,
      head: blocks[1] === SHAPE.blocks,
      threads: THREADS,
      device: 'cpu',
    })
  return [await load([0, 2]), await load([2, 4])] as const
}

describe('a session started from a copy of another’s first positions', () => {
  for (const arch of ['llama', 'qwen2', 'qwen3', 'qwen3moe', 'mixtral', 'deepseek2'] as const) {
    it(`${arch}: goes on as the session that ran them, across a seam`, async () => {
      // mixtral is a llama GGUF with experts: its cache is llama's
      expect(PLAIN_KV_ARCHS.has(arch === 'mixtral' ? 'llama' : arch)).toBe(true)
      const [first, second] = await halves(arch)
      try {
        const open = () => [first.openSession({ maxTokens: 64 }), second.openSession({ maxTokens: 64 })] as const
        const step = async (s: ReturnType<typeof open>, tokens: Int32Array) => {
          const h = await s[0].forward(tokens)
          const out = await s[1].forward(h.data as Float32Array)
          return Array.from(out.data.subarray((out.rows - 1) * out.cols))
        }
        // the donor ran the first 16 and 6 others after them; the copy takes its first 16
        const donor = open()
        await step(donor, PROMPT.subarray(0, 16))
        await step(donor, OTHER)
        const copy = open()
        copy[0].copyPrefix(donor[0], 16)
        copy[1].copyPrefix(donor[1], 16)
        const fresh = open()
        await step(fresh, PROMPT.subarray(0, 16))
        // the same batch shapes (16, then 8, then one at a time): the logits are the same to the bit
        expect(await step(copy, PROMPT.subarray(16))).toEqual(await step(fresh, PROMPT.subarray(16)))
        for (const t of [5, 77, 190])
          expect(await step(copy, Int32Array.of(t))).toEqual(await step(fresh, Int32Array.of(t)))
        for (const s of [...donor, ...copy, ...fresh]) s.close()
      } finally {
        first.dispose()
        second.dispose()
      }
    }, 120_000)
  }

  for (const arch of ['gpt-oss', 'qwen35moe'] as const) {
    it(`${arch}: is refused (a sliding window or a recurrent state is not per position)`, async () => {
      const [first, second] = await halves(arch)
      try {
        const donor = first.openSession({ maxTokens: 64 })
        await donor.forward(PROMPT.subarray(0, 16))
        let error: unknown
        try {
          first.openSession({ maxTokens: 64 }).copyPrefix(donor, 8)
        } catch (e) {
          error = e
        }
        expect(error).toBeInstanceOf(ShardRuntimeError)
        expect((error as ShardRuntimeError).code).toBe('PREFIX_UNSUPPORTED')
        donor.close()
      } finally {
        first.dispose()
        second.dispose()
      }
    }, 120_000)
  }
})
