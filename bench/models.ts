import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type GenerateOptions, generateModel } from '../gguf/generate'

/** Generated benchmark models are cached here (gitignored): they are large and deterministic. */
export const BENCH_DIR = resolve(fileURLToPath(new URL('..', import.meta.url)), '.bench')

/** TinyLlama's shape: 22 blocks, 2048 wide, 32 heads / 4 KV heads, 5632 FFN, 32000 vocab = 1.1B parameters. */
export const LLAMA_1B = { arch: 'llama', blocks: 22, embd: 2048, heads: 32, kvHeads: 4, ff: 5632, vocab: 32000, seed: 1 } as const

/** Path of a cached generated model, writing it first if absent. */
export async function benchModel(type: GenerateOptions['type'], shape: Omit<GenerateOptions, 'type' | 'out'> = LLAMA_1B): Promise<string> {
  await mkdir(BENCH_DIR, { recursive: true })
  const out = join(BENCH_DIR, `${shape.arch}-${shape.blocks}x${shape.embd}-${type}-seed${shape.seed}.gguf`)
  if (!existsSync(out)) {
    const started = performance.now()
    await generateModel({ ...shape, type, out })
    console.error(`generated ${out} in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  }
  return out
}
