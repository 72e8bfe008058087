// npm run bench:seam-tolerance — measures how far an honest host's answers to known-answer probes
// fall from the publisher's reference, to set SEAM_TOLERANCE and ACCEPT_LOGIT_MARGIN (protocol/seam.ts).
// For every model and every block range [a, b): the reference runs one block at a time with f32 seams
// (host/probes.ts referenceRun); the host runs [a, b) in one runtime, f16 in and out, prefill of all
// but two tokens then two single-token steps. Prints one JSON line per model with the honest worst
// seam error (vs SEAM_TOLERANCE), the honest worst logit gap (vs ACCEPT_LOGIT_MARGIN) and the
// smallest error each lie produces, and the same for the sketches receipts commit to (protocol/commitment.ts:
// the answer's sketch against the reference rows, as an audit by prefill compares); the last line sums them up.
//
// Options: --probes 32  --tokens 12  --threads 1  --large (adds a 1.1B q4_0 model, 22×2048: about a minute)
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateModel } from '../gguf/generate'
import { packModel } from '../gguf/pack'
import { acceptLists, referenceRun } from '../host/probes'
import { artifactsFor } from '../native/artifacts'
import { ShardRuntime } from '../native/shard-runtime'
import { SKETCH_TOLERANCE, sketchError, sketchRows } from '../protocol/commitment'
import { ACCEPT_LOGIT_MARGIN, SEAM_TOLERANCE, seamError } from '../protocol/seam'
import { STORIES_260K } from '../test/models'
import { answerRange, argmaxRows, lieAbout, logitGap, type ProbeLie, type RangeAnswer } from '../test/probe-answers'

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? Number(process.argv[i + 1] ?? fallback) : fallback
}

const PROBES = arg('probes', 32)
const TOKENS = arg('tokens', 12)
const THREADS = arg('threads', 1)
const STORIES = STORIES_260K
const LIES: ProbeLie[] = [
  { kind: 'zeros' },
  ...[0.01, 0.05, 0.1, 0.5].map((size) => ({ kind: 'noise', size }) as const),
  { kind: 'skip-block' },
]
const lieName = (l: ProbeLie) => (l.kind === 'noise' ? `noise ${l.size}` : l.kind)

type Case = { name: string; source: (dir: string) => Promise<string> }
const generated = (
  arch: 'llama' | 'qwen3',
  type: 'f16' | 'q8_0' | 'q4_0',
  blocks: number,
  embd: number,
  vocab: number,
): Case => ({
  name: `${arch} ${type} ${blocks}x${embd}`,
  source: async (dir) => {
    const out = join(dir, 'model.gguf')
    await generateModel({
      arch,
      type,
      blocks,
      embd,
      heads: embd / 32,
      kvHeads: embd / 64,
      ff: embd * 2,
      vocab,
      seed: 7,
      out,
    })
    return out
  },
})
const CASES: Case[] = [
  { name: 'stories260K F32', source: async () => STORIES },
  generated('llama', 'q8_0', 4, 128, 384),
  generated('llama', 'q4_0', 4, 128, 384),
  generated('qwen3', 'q8_0', 4, 128, 384),
  generated('qwen3', 'q4_0', 4, 128, 384),
  generated('llama', 'q4_0', 8, 256, 1024),
  generated('llama', 'q8_0', 16, 512, 2048),
  generated('llama', 'q4_0', 16, 512, 2048),
  ...(process.argv.includes('--large') ? [generated('llama', 'q4_0', 22, 2048, 32000)] : []),
]

// Deterministic prompts past the first few (special) ids.
function prompts(vocab: number): number[][] {
  let s = 12345
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return 3 + (s % (vocab - 3))
  }
  return Array.from({ length: PROBES }, () => Array.from({ length: TOKENS }, next))
}

/** Every range of a small model; of a deep one, ranges of 1, 2, 4, 8… blocks at its start, middle and end. */
function ranges(nLayer: number): [number, number][] {
  const all: [number, number][] = []
  for (let a = 0; a < nLayer; a++) for (let b = a + 1; b <= nLayer; b++) all.push([a, b])
  if (nLayer <= 8) return all
  const lengths = [1, 2, 4, 8, 16, 32, 64].filter((n) => n < nLayer).concat([nLayer - 1])
  return all.filter(
    ([a, b]) => lengths.includes(b - a) && [0, Math.floor((nLayer - (b - a)) / 2), nLayer - (b - a)].includes(a),
  )
}

async function measure(c: Case): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'neuron-seam-'))
  try {
    const manifest = await packModel({ source: await c.source(dir), out: join(dir, 'packed'), blocksPerArtifact: 1 })
    const { nLayer, nEmbd, nVocab } = manifest
    const ps = prompts(nVocab)
    const ref = await referenceRun(manifest, join(dir, 'packed'), ps, { threads: THREADS })
    const byLength: Record<string, number> = {}
    const gapByLength: Record<string, number> = {}
    const lies: Record<string, number> = Object.fromEntries(LIES.map((l) => [lieName(l), Number.POSITIVE_INFINITY]))
    const sketchLies: Record<string, number> = { ...lies }
    let worstSketch = 0
    const accepts = ref.logits.map((l) => acceptLists(l, nVocab))
    let worstHidden = 0
    let worstGap = 0
    let disagreements = 0
    let positions = 0
    // a head host skipping its first block: positions whose pick falls outside the accept lists
    let skippedHeadCaught = 0
    let skippedHeadPositions = 0
    for (const [a, b] of ranges(nLayer)) {
      const runtime = await ShardRuntime.load({
        artifacts: artifactsFor(manifest, join(dir, 'packed'), [a, b]),
        blocks: [a, b],
        embed: a === 0,
        head: b === nLayer,
        threads: THREADS,
        device: 'cpu',
      })
      try {
        for (const [i, tokens] of ps.entries()) {
          const input = a === 0 ? undefined : ref.hidden[i]?.[a - 1]
          const answer = (await answerRange(runtime, [a, b], tokens, input, nEmbd)) as RangeAnswer
          if (answer.kind === 'logits') {
            const reference = ref.logits[i] as Float32Array
            const picks = argmaxRows(answer.data, answer.cols)
            const refPicks = argmaxRows(reference, nVocab)
            disagreements += picks.filter((t, p) => t !== refPicks[p]).length
            positions += picks.length
            const gap = logitGap(reference, nVocab, picks)
            worstGap = Math.max(worstGap, gap)
            gapByLength[`${b - a} blocks`] = Math.max(gapByLength[`${b - a} blocks`] ?? 0, gap)
            const skipped = await answerRange(runtime, [a, b], tokens, input, nEmbd, { kind: 'skip-block' })
            if (skipped?.kind === 'logits') {
              const liar = argmaxRows(skipped.data, skipped.cols)
              skippedHeadCaught += liar.filter((t, p) => !accepts[i]?.[p]?.includes(t)).length
              skippedHeadPositions += liar.length
            }
            continue
          }
          const expected = ref.hidden[i]?.[b - 1] as Float32Array
          const e = seamError(answer.data, expected, nEmbd)
          worstHidden = Math.max(worstHidden, e)
          // the answer's sketch (what its receipt commits to) against rows computed another way, as an audit does
          worstSketch = Math.max(worstSketch, sketchError(sketchRows(answer.data, nEmbd), expected, nEmbd))
          byLength[`${b - a} blocks`] = Math.max(byLength[`${b - a} blocks`] ?? 0, e)
          for (const lie of LIES) {
            const told =
              lie.kind === 'skip-block'
                ? await answerRange(runtime, [a, b], tokens, input, nEmbd, lie)
                : { kind: 'hidden', data: lieAbout(answer.data, nEmbd, lie, i + 1) }
            if (told?.kind === 'hidden') {
              lies[lieName(lie)] = Math.min(lies[lieName(lie)] as number, seamError(told.data, expected, nEmbd))
              const k = sketchError(sketchRows(told.data, nEmbd), expected, nEmbd)
              sketchLies[lieName(lie)] = Math.min(sketchLies[lieName(lie)] as number, k)
            }
          }
        }
      } finally {
        runtime.dispose()
      }
    }
    const lengths = accepts.flat().map((l) => l.length)
    return {
      model: c.name,
      probes: PROBES,
      tokens: TOKENS,
      honestWorstSeamError: worstHidden,
      honestWorstByRangeLength: byLength,
      honestWorstLogitGap: worstGap,
      honestWorstLogitGapByRangeLength: gapByLength,
      headArgmaxDisagreements: `${disagreements} of ${positions}`,
      acceptListLength: {
        mean: lengths.reduce((x, y) => x + y, 0) / lengths.length,
        max: Math.max(...lengths),
        nVocab,
      },
      smallestLieError: lies,
      honestWorstSketchError: worstSketch,
      smallestLieSketchError: sketchLies,
      skippedBlockAtHeadCaught: `${skippedHeadCaught} of ${skippedHeadPositions} positions`,
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

const results: Record<string, unknown>[] = []
for (const c of CASES) {
  const r = await measure(c)
  results.push(r)
  process.stdout.write(`${JSON.stringify(r)}\n`)
}
const worst = (key: string) => Math.max(...results.map((r) => r[key] as number))
const seam = worst('honestWorstSeamError')
const sketch = worst('honestWorstSketchError')
const gap = worst('honestWorstLogitGap')
const summary = {
  honestWorstSeamError: seam,
  SEAM_TOLERANCE,
  seamSafety: SEAM_TOLERANCE / seam,
  honestWorstSketchError: sketch,
  SKETCH_TOLERANCE,
  sketchSafety: SKETCH_TOLERANCE / sketch,
  honestWorstLogitGap: gap,
  ACCEPT_LOGIT_MARGIN,
  gapSafety: ACCEPT_LOGIT_MARGIN / gap,
  smallestLieSketchError: Object.fromEntries(
    LIES.map((l) => [
      lieName(l),
      Math.min(...results.map((r) => (r.smallestLieSketchError as Record<string, number>)[lieName(l)] as number)),
    ]),
  ),
}
process.stdout.write(`${JSON.stringify(summary)}\n`)
