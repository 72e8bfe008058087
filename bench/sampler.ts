// npm run bench:sampler — what the last hop's sampler costs per token at a temperature, over a whole vocabulary (the
// OpenAI and Anthropic APIs' default: temperature 1, no top-k) and with Ollama's top-k 40 and top-p 0.9, greedy
// beside them. Ours (native/sampler.ts) against the plain draw in the same run: the vocabulary ordered by logit by one
// numeric sort (what this sampler did before its grouped draw, as llama.cpp's softmax sorts its candidates), then the
// weights walked to the random number. Vocabularies of 32k (Llama 2), 128k (Llama 3) and 201k (gpt-oss) tokens;
// logits flat (an untrained bench model's) and peaked (a trained one's: a few tokens far above the rest). Rounds
// (`--rounds`, default 3) alternate the two; each prints its ms per token, then the medians, the load average and,
// last, one JSON line with the ratios (plain ÷ ours: above 1, ours is faster). Both choose the same tokens (checked).
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { type SampleParams, SeededRandom, sampleToken } from '../native/sampler'
import { median } from './seeded-host'

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '3' }, tokens: { type: 'string', default: '40' } },
})
const ROUNDS = Number(values.rounds)
const TOKENS = Number(values.tokens)

/** The plain draw: every token ordered by logit (ties by lower id; one numeric sort of packed keys), walked to r. */
function plainDraw(logits: Float32Array, temperature: number, rng: () => number): number {
  const bits = new Uint32Array(logits.buffer, logits.byteOffset, logits.length)
  const keys = new Float64Array(logits.length)
  for (let i = 0; i < logits.length; i++) {
    const b = bits[i] as number
    const ordered = b & 0x80000000 ? ~b >>> 0 : (b | 0x80000000) >>> 0
    keys[i] = (0xffffffff - ordered) * 2 ** 21 + i
  }
  keys.sort()
  const order = Array.from(keys, (k) => k % 2 ** 21)
  const max = logits[order[0] as number] as number
  const weights = order.map((id) => Math.exp(((logits[id] as number) - max) / temperature))
  const r = rng() * weights.reduce((a, b) => a + b, 0)
  let cum = 0
  for (let k = 0; k < order.length; k++) {
    cum += weights[k] as number
    if (r < cum) return order[k] as number
  }
  return order.at(-1) as number
}

function logitsOf(n: number, kind: 'flat' | 'peaked', seed: number): Float32Array {
  const r = new SeededRandom(seed)
  return Float32Array.from({ length: n }, () =>
    kind === 'flat' ? r.next() * 10 : (r.next() < 0.001 ? 25 : 0) + r.next() * 20,
  )
}

/** ms per token of `draw` over TOKENS fresh logits, and the tokens it chose. */
function timed(n: number, kind: 'flat' | 'peaked', draw: (l: Float32Array, rng: () => number) => number) {
  const rng = new SeededRandom(11)
  const chosen: number[] = []
  let ms = 0
  for (let t = 0; t < TOKENS; t++) {
    const logits = logitsOf(n, kind, 100 + t)
    const started = performance.now()
    chosen.push(draw(logits, () => rng.next()))
    ms += performance.now() - started
  }
  return { ms: ms / TOKENS, chosen }
}

const ours = (params: SampleParams) => (l: Float32Array, rng: () => number) => sampleToken(l, params, [], rng).token
const cases = [32_000, 128_256, 201_088].flatMap((n) =>
  (['flat', 'peaked'] as const).map((kind) => ({ n, kind, name: `${Math.round(n / 1000)}k_${kind}` })),
)
const plain: Record<string, number[]> = {}
const mine: Record<string, number[]> = {}
const others: Record<string, number[]> = {}
for (let round = 0; round < ROUNDS; round++) {
  for (const { n, kind, name } of cases) {
    const runPlain = () => timed(n, kind, (l, rng) => plainDraw(l, 1, rng))
    const runOurs = () => timed(n, kind, ours({ temperature: 1 }))
    // alternating which goes first
    const first = round % 2 === 0 ? runPlain() : runOurs()
    const second = round % 2 === 0 ? runOurs() : runPlain()
    const [a, b] = round % 2 === 0 ? [first, second] : [second, first]
    if (a.chosen.join() !== b.chosen.join()) throw new Error(`${name}: the two draws chose other tokens`)
    const topK = timed(n, kind, ours({ temperature: 0.8, topK: 40, topP: 0.9 }))
    const greedy = timed(n, kind, ours({ temperature: 0 }))
    for (const [book, key, ms] of [
      [plain, name, a.ms],
      [mine, name, b.ms],
      [others, `${name}_topk40_topp0.9`, topK.ms],
      [others, `${name}_greedy`, greedy.ms],
    ] as const) {
      book[key] = [...(book[key] ?? []), ms]
    }
    const round3 = (x: number) => +x.toFixed(3)
    console.log(
      JSON.stringify({
        round,
        vocabulary: name,
        plain_ms_per_token: round3(a.ms),
        ours_ms_per_token: round3(b.ms),
        ours_topk40_topp09_ms: round3(topK.ms),
        ours_greedy_ms: round3(greedy.ms),
        load_average: +(loadavg()[0] ?? 0).toFixed(2),
      }),
    )
  }
}
const results: Record<string, number | string> = { bench: 'sampler', tokens: TOKENS, rounds: ROUNDS }
for (const { name } of cases) {
  results[`ratio_${name}`] = +(median(plain[name] ?? []) / median(mine[name] ?? [])).toFixed(2)
  results[`plain_ms_${name}`] = +median(plain[name] ?? []).toFixed(3)
  results[`ours_ms_${name}`] = +median(mine[name] ?? []).toFixed(3)
}
for (const [name, ms] of Object.entries(others)) results[`ours_ms_${name}`] = +median(ms).toFixed(3)
results.load_average = +(loadavg()[0] ?? 0).toFixed(2)
console.log(JSON.stringify(results))
