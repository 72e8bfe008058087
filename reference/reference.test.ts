// The PyTorch reference (reference/run.py) against our native runtime at every seam, and against
// node-llama-cpp's next-token distribution: the reference shows the hidden state after each block,
// which node-llama-cpp cannot, and node-llama-cpp checks the reference independently of our graphs.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { GENERATED_ARCHS, type GeneratedArch, generateModel, type MoeOptions } from '../gguf/generate'
import { artifactsFor } from '../native/artifacts'
import { softmax } from '../native/sampler'
import { REPO_ROOT } from '../test/models'
import { packedStories, RuntimePool, removePackedStories, STORIES } from '../test/native'
import {
  hasTorch,
  NO_TORCH,
  type Npy,
  PYTHON,
  type Reference,
  relativeError,
  runReference as runReferenceIn,
  SEAM_TOLERANCE,
} from '../test/reference'

/** max |p_ref − p_llama.cpp| over the next-token distribution (measured: 3e-7 to 6e-4). */
const PROBS_TOLERANCE = 1e-3
// Every family the native runtime serves or will serve; mixtral is llama with experts.
const FAMILIES = ['llama', 'qwen2', 'qwen3', 'qwen3moe', 'mixtral', 'deepseek2', 'gpt-oss'] as const
// small but real: 4 blocks, GQA, quantizable widths
const SHAPE = { blocks: 4, embd: 128, heads: 4, kvHeads: 2, ff: 256, vocab: 384, seed: 11 }
type Family = (typeof FAMILIES)[number]
// a window shorter than the prompt, so gpt-oss's sliding-window layers mask something
const OPTIONS: Partial<Record<Family, MoeOptions>> = { 'gpt-oss': { slidingWindow: 3 } }
/** YaRN as DeepSeek-V3 and gpt-oss ship it (shorter original context, so a short prompt feels it). */
const YARN: Record<string, [string, string]> = {
  'rope.scaling.type': ['str', 'yarn'],
  'rope.scaling.factor': ['f32', '4'],
  'rope.scaling.original_context_length': ['u32', '64'],
}
const YARN_LOG_MUL: Record<string, [string, string]> = { 'rope.scaling.yarn_log_multiplier': ['f32', '0.0707'] }
const CASES: { name: string; family: Family; yarn?: Record<string, [string, string]> }[] = [
  ...FAMILIES.map((family) => ({ name: family, family })),
  { name: 'deepseek2 with YaRN', family: 'deepseek2', yarn: { ...YARN, ...YARN_LOG_MUL } },
  { name: 'gpt-oss with YaRN', family: 'gpt-oss', yarn: YARN },
]
/** BOS + 7 made-up words; `shift` gives another prompt of the same length. */
const prompt = (shift: number) => [1, ...Array.from({ length: 7 }, (_, i) => 300 + ((i * 7 + shift * 13) % 80))]
/**
 * Smallest gap the test accepts between the last chosen and the first unchosen expert's router score:
 * below it, a rounding difference elsewhere may legitimately pick another expert and change a seam.
 */
const MIN_ROUTER_MARGIN = 2e-4

const scratch = mkdtempSync(join(tmpdir(), 'neuron-reference-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
const runReference = (artifacts: string[], tokens: number[], f16Attention = true) =>
  runReferenceIn(scratch, artifacts, tokens, f16Attention)

/** Our runtime's hidden state after every block and its logits for every position, one causal batch. */
async function nativeSeams(
  pool: RuntimePool,
  nLayer: number,
  tokens: number[],
): Promise<{ hidden: Float32Array[]; logits: Float32Array }> {
  const hidden: Float32Array[] = []
  const whole = await pool.get([0, nLayer], true, true)
  for (let k = 1; k < nLayer; k++) {
    const s = whole.openSession({ maxTokens: 64, blocks: [0, k] })
    const out = await s.forward(Int32Array.from(tokens), { hiddenType: 'f32' })
    s.close()
    if (out.kind !== 'hidden' || out.dtype !== 'f32') throw new Error(`blocks [0, ${k}) returned ${out.kind}`)
    hidden.push(out.data)
  }
  const noHead = (await pool.get([0, nLayer], true, false)).openSession({ maxTokens: 64 })
  const last = await noHead.forward(Int32Array.from(tokens), { hiddenType: 'f32' })
  noHead.close()
  hidden.push(last.data as Float32Array)
  const s = whole.openSession({ maxTokens: 64 })
  const out = await s.forward(Int32Array.from(tokens), { allLogits: true })
  s.close()
  if (out.kind !== 'logits') throw new Error(`the whole model returned ${out.kind}`)
  return { hidden, logits: out.data }
}

/** Compares every seam and the logits; returns the relative errors for the log. */
async function compareWithNative(pool: RuntimePool, ref: Reference, tokens: number[]): Promise<number[]> {
  const ours = await nativeSeams(pool, ref.hidden.length, tokens)
  const errors = ref.hidden.map((h, i) => relativeError(ours.hidden[i] as Float32Array, h.data))
  errors.push(relativeError(ours.logits, ref.logits.data))
  return errors
}

/**
 * node-llama-cpp's next-token distribution after `tokens` (one batch), in a child process: llama.cpp
 * aborts the whole process on a failed GGML_ASSERT, and a new architecture must fail only its test.
 */
function llamaCppProbs(model: string, tokens: number[], nVocab: number): Float64Array {
  const nodeLlamaCpp = pathToFileURL(join(REPO_ROOT, 'node_modules/node-llama-cpp/dist/index.js')).href
  const script = `
    import { getLlama, LlamaLogLevel } from '${nodeLlamaCpp}'
    const { model, tokens, nVocab } = JSON.parse(process.env.NEURON_ORACLE_JOB)
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, maxThreads: 1 })
    const m = await llama.loadModel({ modelPath: model })
    const context = await m.createContext({ contextSize: 256, threads: 1, flashAttention: true, sequences: 1 })
    const it = context.getSequence().evaluateWithMetadata(tokens, { probabilities: true }, { temperature: 0 })
    const step = (await it.next()).value
    await it.return()
    const probs = new Array(nVocab).fill(0)
    for (const [t, p] of step.probabilities) probs[t] = p
    process.stdout.write(JSON.stringify(probs))
    await context.dispose(); await m.dispose(); await llama.dispose()`
  // a script file, not -e: node-llama-cpp tests its binary in a fork that inherits execArgv
  const file = join(scratch, 'llama-cpp-probs.mjs')
  writeFileSync(file, script)
  const res = spawnSync(process.execPath, [file], {
    cwd: REPO_ROOT,
    env: { ...process.env, NEURON_ORACLE_JOB: JSON.stringify({ model, tokens, nVocab }) },
    encoding: 'utf8',
    timeout: 120_000,
    maxBuffer: 64 << 20,
  })
  if (res.status !== 0)
    throw new Error(`node-llama-cpp could not run ${model} (${res.status ?? res.signal}): ${res.stderr.slice(-2000)}`)
  return Float64Array.from(JSON.parse(res.stdout) as number[])
}

function maxProbDiff(refLogits: Npy, probs: Float64Array): number {
  const [rows, cols] = refLogits.shape as [number, number]
  const ref = softmax(refLogits.data.subarray((rows - 1) * cols, rows * cols))
  let worst = 0
  for (let i = 0; i < cols; i++) worst = Math.max(worst, Math.abs((ref[i] as number) - (probs[i] as number)))
  return worst
}

const fmt = (errors: number[]) => errors.map((e) => e.toExponential(1)).join(' ')

describe.skipIf(!hasTorch)(`PyTorch reference on stories260K${NO_TORCH}`, () => {
  afterAll(() => removePackedStories())

  it('reads a packed artifact set and matches our runtime at every seam and node-llama-cpp', async () => {
    const { manifest, dir } = await packedStories()
    const tokens = [1, 403, 407, 261, 409, 300, 291, 400]
    const ref = runReference(artifactsFor(manifest, dir, [0, manifest.nLayer]), tokens)
    expect(ref.arch).toBe('llama')
    expect(ref.hidden).toHaveLength(manifest.nLayer)
    expect(ref.hidden[0]?.shape).toEqual([tokens.length, 64])
    // the whole-model GGUF gives the same numbers as its artifacts
    expect(relativeError(runReference([STORIES], tokens).logits.data, ref.logits.data)).toBe(0)
    // all-f32 attention stays within the tolerance too on this trained model
    const f32 = runReference([STORIES], tokens, false)
    const pool = new RuntimePool((blocks) => artifactsFor(manifest, dir, blocks), manifest.nLayer)
    try {
      const errors = await compareWithNative(pool, ref, tokens)
      const f32Errors = await compareWithNative(pool, f32, tokens)
      const dp = maxProbDiff(ref.logits, llamaCppProbs(STORIES, tokens, 512))
      console.log(
        `stories260K: seams+logits rel err ${fmt(errors)} (all-f32 attention: ${fmt(f32Errors)}); max |dp| vs ` +
          `llama.cpp ${dp.toExponential(1)}`,
      )
      expect(Math.max(...errors)).toBeLessThan(SEAM_TOLERANCE)
      expect(Math.max(...f32Errors)).toBeLessThan(SEAM_TOLERANCE)
      // on this model (8 tokens, 8-wide heads) the flash-attention emulation reproduces llama.cpp to 3e-7
      expect(dp).toBeLessThan(1e-5)
    } finally {
      await pool.dispose()
    }
  })
})

describe.skipIf(!hasTorch)(`PyTorch reference on generated models, every family${NO_TORCH}`, () => {
  type Case = { path: string; tokens: number[]; ref: Reference }
  const models = new Map<Family, Promise<string>>()
  const modelFor = (family: Family) => {
    let m = models.get(family)
    if (!m) {
      if (!(GENERATED_ARCHS as readonly string[]).includes(family))
        throw new Error(
          `generateModel has no "${family}" yet (GENERATED_ARCHS: ${GENERATED_ARCHS.join(', ')}); add it to ` +
            `gguf/generate.ts`,
        )
      const out = join(scratch, `${family}.gguf`)
      m = generateModel({ ...SHAPE, ...OPTIONS[family], arch: family as GeneratedArch, type: 'f32', out }).then(
        () => out,
      )
      models.set(family, m)
    }
    return m
  }
  const cases = new Map<string, Promise<Case>>()
  /** The case's generated model (f32 weights) and the first prompt no expert choice is a near-tie for. */
  const caseFor = ({ name, family, yarn }: (typeof CASES)[number]) => {
    let c = cases.get(name)
    if (!c) {
      c = modelFor(family).then((base) => {
        let path = base
        if (yarn) {
          path = join(scratch, `${family}-yarn.gguf`)
          const sets = Object.entries(yarn).flatMap(([key, [type, value]]) => [
            '--set',
            `${family}.${key}`,
            type,
            value,
          ])
          const res = spawnSync(PYTHON, [join(REPO_ROOT, 'reference/with_metadata.py'), base, path, ...sets], {
            encoding: 'utf8',
          })
          if (res.status !== 0) throw new Error(`reference/with_metadata.py failed: ${res.stderr}`)
        }
        const margins: number[] = []
        for (let shift = 0; shift < 8; shift++) {
          const tokens = prompt(shift)
          const ref = runReference([path], tokens)
          if (ref.routerMargin === null || ref.routerMargin >= MIN_ROUTER_MARGIN) return { path, tokens, ref }
          margins.push(ref.routerMargin)
        }
        throw new Error(
          `every prompt tried has a near-tie between experts (margins ` +
            `${margins.map((m) => m.toExponential(1)).join(', ')})`,
        )
      })
      cases.set(name, c)
    }
    return c
  }

  for (const c of CASES) {
    it(`${c.name}: the reference's next-token distribution matches node-llama-cpp's`, async () => {
      const { path, tokens, ref } = await caseFor(c)
      const dp = maxProbDiff(ref.logits, llamaCppProbs(path, tokens, SHAPE.vocab))
      console.log(`${c.name}: max |dp| reference vs llama.cpp ${dp.toExponential(1)}`)
      expect(dp).toBeLessThan(PROBS_TOLERANCE)
    })

    it(`${c.name}: our runtime matches the reference at every seam (relative error < ${SEAM_TOLERANCE})`, async () => {
      const { path, tokens, ref } = await caseFor(c)
      const pool = new RuntimePool(() => [path], SHAPE.blocks)
      try {
        const errors = await compareWithNative(pool, ref, tokens)
        const margin = ref.routerMargin === null ? '' : `; smallest router margin ${ref.routerMargin.toExponential(1)}`
        console.log(`${c.name}: seams+logits rel err ${fmt(errors)}${margin}`)
        expect(
          errors.every((e) => e < SEAM_TOLERANCE),
          `${fmt(errors)}${margin}`,
        ).toBe(true)
      } finally {
        await pool.dispose()
      }
    })
  }
})
