import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { generateModel } from '../gguf/generate'
import { logitsOf, STORIES, storiesMissing, THREADS } from '../test/native'
import { ShardRuntimeError } from './errors'
import { ShardRuntime } from './shard-runtime'

const dir = mkdtempSync(join(tmpdir(), 'neuron-mmap-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const PROMPT = Int32Array.of(1, 303, 307, 261, 378, 16, 312, 270)

function load(path: string, blocks: number, mmap: boolean): Promise<ShardRuntime> {
  return ShardRuntime.load({ artifacts: [path], blocks: [0, blocks], embed: true, head: true, threads: THREADS, device: 'cpu', mmap })
}

/** Every position's logits of a prefill, then of one decode step: what the user's tokens come from. */
async function logits(rt: ShardRuntime): Promise<Float32Array[]> {
  const session = rt.openSession({ maxTokens: 64 })
  try {
    const prefill = logitsOf(await session.forward(PROMPT, { allLogits: true }))
    const { token } = session.sample({ temperature: 0 })
    const decode = logitsOf(await session.forward(Int32Array.of(token)))
    return [prefill, decode]
  } finally {
    session.close()
  }
}

describe.skipIf(storiesMissing)(`weights mapped from the artifact file ${storiesMissing ?? ''}`, () => {
  it('stories260K (f32): mapped and read-in runtimes give identical logits; the mapping is reported', async () => {
    const mapped = await load(STORIES, 5, true)
    const copied = await load(STORIES, 5, false)
    try {
      expect(await logits(mapped)).toEqual(await logits(copied))
      // f32 weights are never repacked: every byte is used in place, none copied
      const m = mapped.info()
      expect(m.mappedBytes).toBeGreaterThan(0)
      expect(m.weightBuffers).toEqual({ CPU_Mapped: m.mappedBytes })
      expect(m.mappedBytes).toBeLessThanOrEqual(statSync(STORIES).size)
      expect(copied.info().mappedBytes).toBe(0)
      expect(copied.info().weightBuffers.CPU_Mapped).toBeUndefined()
    } finally {
      mapped.dispose()
      copied.dispose()
    }
  })

  it('a mapped artifact deleted and rewritten under the runtime (a re-download) does not change its logits', async () => {
    const path = join(dir, 'stories-replaced.gguf')
    copyFileSync(STORIES, path)
    const rt = await load(path, 5, true)
    try {
      const before = await logits(rt)
      const bytes = readFileSync(path)
      rmSync(path)
      writeFileSync(
        path,
        bytes.map((b) => b ^ 0xff),
      )
      expect(await logits(rt)).toEqual(before)
    } finally {
      rt.dispose()
    }
  })

  it('a truncated artifact is refused with the same typed error with mmap on or off', async () => {
    const path = join(dir, 'stories-truncated.gguf')
    copyFileSync(STORIES, path)
    truncateSync(path, statSync(path).size - 4096)
    const codes: string[] = []
    for (const mmap of [true, false]) {
      const err = await load(path, 5, mmap).then(
        (rt) => {
          rt.dispose()
          return undefined
        },
        (e: unknown) => e,
      )
      expect(err).toBeInstanceOf(ShardRuntimeError)
      codes.push((err as ShardRuntimeError).code)
    }
    expect(codes[0]).toMatch(/^ARTIFACT_/)
    expect(codes[0]).toBe(codes[1])
    console.log(`truncated artifact: ${codes.join(', ')}`)
  })
})

describe('weights mapped next to repacked ones', () => {
  it('llama q4_0: identical logits with mmap on and off; what is not repacked is mapped', async () => {
    const path = join(dir, 'llama-q4_0.gguf')
    await generateModel({ arch: 'llama', type: 'q4_0', blocks: 2, embd: 128, heads: 4, kvHeads: 2, ff: 256, vocab: 384, seed: 3, out: path })
    const mapped = await load(path, 2, true)
    const copied = await load(path, 2, false)
    try {
      expect(await logits(mapped)).toEqual(await logits(copied))
      const m = mapped.info()
      const c = copied.info()
      // the same tensors are repacked either way (on CPUs with a repacking buffer type for q4_0: AVX2, ARM dotprod)
      expect(m.weightBuffers.CPU_REPACK).toBe(c.weightBuffers.CPU_REPACK)
      // the embedding and the norms at least stay in the file's layout
      expect(m.mappedBytes).toBeGreaterThanOrEqual(384 * 128 * (18 / 32))
      expect(c.mappedBytes).toBe(0)
      console.log(`llama q4_0 weight buffers, mapped: ${JSON.stringify(m.weightBuffers)}; read in: ${JSON.stringify(c.weightBuffers)}`)
    } finally {
      mapped.dispose()
      copied.dispose()
    }
  })
})
