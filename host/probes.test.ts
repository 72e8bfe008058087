import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateModel } from '../gguf/generate'
import { packModel } from '../gguf/pack'
import { artifactsFor } from '../native/artifacts'
import { oracleGreedy, oracleModel } from '../native/oracle'
import { SeededRandom } from '../native/sampler'
import { ShardRuntime } from '../native/shard-runtime'
import { type Manifest, type ProbeSet, probeChunks, SEAM_TOLERANCE, seamError } from '../protocol'
import { STORIES_260K, scratchDir } from '../test/models'
import { answerRange, argmaxRows, lieAbout, type ProbeLie } from '../test/probe-answers'
import { computeProbeSet } from './probes'

const THREADS = 1
const f32 = (b: Uint8Array) => new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4)
const seeded = (seed: number) => {
  const rng = new SeededRandom(seed)
  return () => rng.next()
}

let dir = ''
let cleanup: () => Promise<void> = async () => {}
beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir('neuron-probes-'))
})
afterAll(() => cleanup())

/** Every range [a, b) of the model, answered by an honest f16 host and by liars, against `set`. */
async function answerEveryRange(manifest: Manifest, packed: string, set: ProbeSet, lies: ProbeLie[] = []) {
  const honest: number[] = []
  const rejected: string[] = []
  const lying: Record<string, number[]> = {}
  for (let a = 0; a < manifest.nLayer; a++) {
    for (let b = a + 1; b <= manifest.nLayer; b++) {
      const runtime = await ShardRuntime.load({
        artifacts: artifactsFor(manifest, packed, [a, b]),
        blocks: [a, b],
        embed: a === 0,
        head: b === manifest.nLayer,
        threads: THREADS,
        device: 'cpu',
      })
      try {
        for (const [i, probe] of set.probes.entries()) {
          const input = a === 0 ? undefined : f32(probe.hidden[a - 1] as Uint8Array)
          const answer = await answerRange(runtime, [a, b], probe.tokens, input, set.nEmbd)
          if (answer?.kind === 'logits') {
            for (const [p, t] of argmaxRows(answer.data, answer.cols).entries())
              if (!probe.accept[p]?.includes(t)) rejected.push(`[${a}, ${b}) probe ${i} position ${p}`)
            continue
          }
          const expected = f32(probe.hidden[b - 1] as Uint8Array)
          honest.push(seamError(answer?.data ?? [], expected, set.nEmbd))
          for (const lie of lies) {
            const told =
              lie.kind === 'skip-block'
                ? await answerRange(runtime, [a, b], probe.tokens, input, set.nEmbd, lie)
                : { data: lieAbout(answer?.data ?? new Float32Array(), set.nEmbd, lie, i + 1) }
            const key = lie.kind === 'noise' ? `noise ${lie.size}` : lie.kind
            if (told !== undefined) lying[key] = [...(lying[key] ?? []), seamError(told.data, expected, set.nEmbd)]
          }
        }
      } finally {
        runtime.dispose()
      }
    }
  }
  return { honest, rejected, lying }
}

describe(`the publisher's known-answer probes of stories260K`, () => {
  let manifest: Manifest
  let packed = ''
  let set: ProbeSet
  beforeAll(async () => {
    packed = join(dir, 'stories')
    manifest = await packModel({ source: STORIES_260K, out: packed, blocksPerArtifact: 2 })
    set = await computeProbeSet(manifest, packed, { threads: THREADS, count: 4, random: seeded(1) })
  })

  it('records the hidden state at every block boundary for random prompts without control tokens', () => {
    expect(set).toMatchObject({ modelId: manifest.modelId, nLayer: 5, nEmbd: manifest.nEmbd })
    expect(set.probes).toHaveLength(4)
    for (const probe of set.probes) {
      expect(probe.tokens).toHaveLength(12)
      expect(probe.boundaries).toEqual([1, 2, 3, 4])
      for (const h of probe.hidden) expect(h.byteLength).toBe(12 * manifest.nEmbd * 4)
      // stories260K's ids 0-2 are <unk>, <s> and </s>
      expect(Math.min(...probe.tokens)).toBeGreaterThan(2)
    }
    expect(new Set(set.probes.flatMap((p) => p.tokens)).size).toBeGreaterThan(24)
  })

  it("accepts node-llama-cpp's greedy next token after every prompt, as its first choice", async () => {
    const model = await oracleModel(STORIES_260K)
    try {
      for (const probe of set.probes) {
        const [next] = await oracleGreedy(model, probe.tokens, 1, manifest.nVocab)
        expect(probe.accept.at(-1)?.[0]).toBe(next?.token)
      }
    } finally {
      await model.dispose()
    }
  })

  it('chains blocks one at a time into the hidden states a whole-model runtime computes', async () => {
    const runtime = await ShardRuntime.load({
      artifacts: artifactsFor(manifest, packed, [0, 5]),
      blocks: [0, 5],
      embed: true,
      head: true,
      threads: THREADS,
      device: 'cpu',
    })
    try {
      for (const probe of set.probes) {
        for (const [j, b] of probe.boundaries.entries()) {
          // in the chunks the prober sends and the publisher computed them in
          const session = runtime.openSession({ maxTokens: 12, blocks: [0, b] })
          const rows: number[] = []
          for (const [from, to] of probeChunks(probe.tokens.length)) {
            const out = await session.forward(Int32Array.from(probe.tokens.slice(from, to)), { positions: from })
            rows.push(...out.data)
          }
          session.close()
          expect(seamError(Float32Array.from(rows), f32(probe.hidden[j] as Uint8Array), manifest.nEmbd)).toBeLessThan(
            1e-5,
          )
        }
      }
    } finally {
      runtime.dispose()
    }
  })

  it(
    'passes an honest f16 host on every range and catches ' + 'zeros, noise of half the signal and a skipped block',
    async () => {
      const lies: ProbeLie[] = [{ kind: 'zeros' }, { kind: 'noise', size: 0.5 }, { kind: 'skip-block' }]
      const { honest, rejected, lying } = await answerEveryRange(manifest, packed, set, lies)
      expect(honest).toHaveLength(10 * 4)
      expect(Math.max(...honest)).toBeLessThan(SEAM_TOLERANCE / 10)
      expect(rejected).toEqual([])
      for (const lie of ['zeros', 'noise 0.5', 'skip-block'])
        expect(Math.min(...(lying[lie] ?? [])), lie).toBeGreaterThan(SEAM_TOLERANCE)
    },
  )

  it('holds fewer probes when their hidden states would pass maxBytes, but always one', async () => {
    const perProbe = 4 * 12 * manifest.nEmbd * 4
    expect(
      (await computeProbeSet(manifest, packed, { threads: THREADS, count: 4, maxBytes: 2 * perProbe })).probes,
    ).toHaveLength(2)
    expect((await computeProbeSet(manifest, packed, { threads: THREADS, maxBytes: 1 })).probes).toHaveLength(1)
  })
})

describe('the probes of a generated q4_0 model', () => {
  it('pass an honest f16 host on every range within SEAM_TOLERANCE, with its greedy picks accepted', async () => {
    const source = join(dir, 'q4.gguf')
    await generateModel({
      arch: 'llama',
      type: 'q4_0',
      blocks: 4,
      embd: 128,
      heads: 4,
      kvHeads: 2,
      ff: 256,
      vocab: 384,
      seed: 3,
      out: source,
    })
    const packed = join(dir, 'q4')
    const manifest = await packModel({ source, out: packed, blocksPerArtifact: 1 })
    const set = await computeProbeSet(manifest, packed, { threads: THREADS, count: 4, random: seeded(2) })
    const { honest, rejected } = await answerEveryRange(manifest, packed, set)
    expect(honest).toHaveLength(6 * 4)
    expect(Math.max(...honest)).toBeLessThan(SEAM_TOLERANCE)
    expect(rejected).toEqual([])
  })
})
