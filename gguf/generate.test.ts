import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { getLlama, type Llama, LlamaCompletion, LlamaLogLevel } from 'node-llama-cpp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scratchDir } from '../test/models'
import { generateModel } from './generate'
import { describeModel } from './model'
import { readGguf } from './reader'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let llama: Llama
beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir())
  llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error })
})
afterAll(async () => {
  await llama?.dispose()
  await cleanup()
})

const tiny = { blocks: 2, embd: 64, heads: 4, kvHeads: 2, ff: 128, vocab: 320, seed: 11 }

// The expert and MLA architectures and the K-quant mixes load in a child process: generate-archs.test.ts.
const DENSE_ARCHS = ['llama', 'qwen2', 'qwen3'] as const
const PLAIN_TYPES = ['f32', 'f16', 'q8_0', 'q4_0'] as const

describe('gen-model output loads in node-llama-cpp 3.21.1 and generates tokens', () => {
  for (const arch of DENSE_ARCHS) {
    for (const type of PLAIN_TYPES) {
      it(`${arch} ${type}`, async () => {
        const out = join(dir, `${arch}-${type}.gguf`)
        await generateModel({ ...tiny, arch, type, out })
        const layout = describeModel(await readGguf(out))
        expect(layout.architecture).toBe(arch)
        expect(layout.blocks.map((b) => b.length)).toEqual(
          Array(tiny.blocks).fill({ llama: 9, qwen2: 12, qwen3: 11 }[arch]),
        )

        const model = await llama.loadModel({ modelPath: out })
        const context = await model.createContext({ contextSize: 128, threads: 1 })
        try {
          const completion = new LlamaCompletion({ contextSequence: context.getSequence() })
          let tokens = 0
          await completion.generateCompletion('Once upon a time', {
            maxTokens: 8,
            temperature: 0,
            onToken: (chunk) => {
              tokens += chunk.length
            },
          })
          expect(tokens).toBeGreaterThan(0)
          expect(model.tokens.bos).toBe(1)
          expect(model.fileInfo.metadata.general.architecture).toBe(arch)
        } finally {
          await context.dispose()
          await model.dispose()
        }
      })
    }
  }
})

describe('gen-model is deterministic', () => {
  it('the same seed writes the same bytes; another seed, other weights', async () => {
    const opts = { ...tiny, arch: 'qwen2' as const, type: 'q4_0' as const }
    await generateModel({ ...opts, out: join(dir, 'a.gguf') })
    await generateModel({ ...opts, out: join(dir, 'b.gguf') })
    await generateModel({ ...opts, seed: 12, out: join(dir, 'c.gguf') })
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((n) => readFile(join(dir, `${n}.gguf`))))
    expect(a?.equals(b as Buffer)).toBe(true)
    expect(a?.length).toBe(c?.length)
    expect(a?.equals(c as Buffer)).toBe(false)
  })
})
