// npm run bench:mixed-load — decode latency while a long prompt arrives, on one host: 8 sessions decode greedily
// through the host's StepBatcher (the shard server's serving path without the socket) and a 2 000-token prompt arrives
// once they are under way. Each round runs, alternating: the decoders alone (quiet), the prompt run whole
// (prefillChunkTokens 0, as before chunking), the prompt in chunks (the default), and node-llama-cpp doing the same in
// one context (8 decoding sequences and a 9th evaluating the prompt), same model, same threads. Printed per round and
// as medians: the decoders' p50 and p99 inter-token gap while the prompt is prefilled (quiet: over the whole run),
// and the prompt's own prefill time. The last JSON line holds the ratios, among them p99 with the prompt ÷ p50 quiet.
//
// Options: --model <gguf> (default: the 1.1B bench llama if cached, else a small generated llama)  --threads 1
//          --decoders 8  --prompt 2000  --chunk 64  --rounds 3  --warm 6 (tokens each decoder has before the prompt)
import { loadavg } from 'node:os'
import type { Token } from 'node-llama-cpp'
import { PREFILL_CHUNK_TOKENS, StepBatcher } from '../host/serving/step-batcher'
import { loadBatchBench, promptOf } from './batch-models'

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback
}

function emit(record: object): void {
  process.stdout.write(`${JSON.stringify(record)}\n`)
}

function quantile(xs: readonly number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number
}

const median = (xs: readonly number[]) => quantile(xs, 0.5)

const threads = Number(arg('threads', '1'))
const decoders = Number(arg('decoders', '8'))
const promptLen = Number(arg('prompt', '2000'))
const chunk = Number(arg('chunk', String(PREFILL_CHUNK_TOKENS)))
const rounds = Number(arg('rounds', '3'))
const warm = Number(arg('warm', '6'))
/** The decoders' own prompts. */
const DECODER_PROMPT = 16
/** Tokens the decoders take in the quiet run (as many gaps as a prompt run's window holds, roughly). */
const QUIET_TOKENS = 48
/** Bound on each decoder's tokens in one run (the prompt's window ends long before on any machine). */
const MAX_TOKENS = 4096

const { path, shape, ours, vocab, model } = await loadBatchBench(arg('model', ''), threads)
const PROMPT = promptOf(999, promptLen, vocab)

type Mode = 'quiet' | 'whole' | 'chunked' | 'llama_cpp'
interface Run {
  /** The decoders' gaps between tokens while the prompt was prefilled (quiet: all of them), ms. */
  gaps: number[]
  /** The prompt's prefill, ms (quiet: 0). */
  promptMs: number
}

/**
 * Gaps between consecutive tokens of each decoder that overlap [from, to]:
 * a token that waited on the prompt counts, however long it waited.
 */
function gapsIn(times: readonly number[][], from: number, to: number): number[] {
  const gaps: number[] = []
  for (const t of times)
    for (let i = 1; i < t.length; i++)
      if ((t[i] as number) > from && (t[i - 1] as number) < to) gaps.push((t[i] as number) - (t[i - 1] as number))
  return gaps
}

/** Until each decoder has taken `more[k]` tokens in all (polled every ms). */
async function untilEach(times: readonly number[][], more: readonly number[]): Promise<void> {
  while (times.some((t, k) => t.length < (more[k] as number))) await new Promise((r) => setTimeout(r, 1))
}

/**
 * The decoders through our batcher, each answer's time kept; unless quiet, the prompt arrives once each has `warm`
 * tokens, run whole or in chunks as `mode` says, and they stop two tokens after it is answered.
 */
async function ourRun(mode: Exclude<Mode, 'llama_cpp'>): Promise<Run> {
  const batcher = new StepBatcher(ours, { prefillChunkTokens: mode === 'whole' ? 0 : chunk })
  const sessions = Array.from({ length: decoders }, () =>
    ours.openSession({ maxTokens: DECODER_PROMPT + MAX_TOKENS + 8 }),
  )
  const prompted = ours.openSession({ maxTokens: promptLen + 8 })
  const times: number[][] = sessions.map(() => [])
  let window: [number, number] | undefined
  let stop = false
  try {
    const next = await Promise.all(
      sessions.map(async (s, k) => {
        await batcher.forward(s, Int32Array.from(promptOf(k, DECODER_PROMPT, vocab)), {})
        return s.sample({ temperature: 0 }).token
      }),
    )
    const decoding = sessions.map(async (s, k) => {
      let token = next[k] as number
      for (let i = 0; i < MAX_TOKENS && !stop; i++) {
        await batcher.forward(s, Int32Array.of(token), {})
        token = s.sample({ temperature: 0 }).token
        times[k]?.push(performance.now())
        if (mode === 'quiet' && i + 1 >= QUIET_TOKENS) break
      }
    })
    if (mode !== 'quiet') {
      await untilEach(
        times,
        times.map(() => warm),
      )
      const t0 = performance.now()
      await batcher.forward(prompted, Int32Array.from(PROMPT), {})
      window = [t0, performance.now()]
      // a few tokens more, so the gap the prompt's last chunk held is closed
      await untilEach(
        times,
        times.map((t) => t.length + 2),
      )
      stop = true
    }
    await Promise.all(decoding)
  } finally {
    stop = true
    for (const s of sessions) s.close()
    prompted.close()
  }
  if (window === undefined) return { gaps: gapsIn(times, -Infinity, Infinity), promptMs: 0 }
  return { gaps: gapsIn(times, window[0], window[1]), promptMs: window[1] - window[0] }
}

async function llamaRun(): Promise<Run> {
  const perSequence = Math.max(promptLen, DECODER_PROMPT + MAX_TOKENS) + 16
  const context = await model.createContext({
    contextSize: (decoders + 1) * perSequence,
    batchSize: 512,
    threads,
    flashAttention: true,
    sequences: decoders + 1,
    // as bench:batch: a few ms to gather the sequences' tokens into one batch
    batching: { dispatchSchedule: (dispatch: () => void) => void setTimeout(dispatch, 5) },
  })
  const times: number[][] = Array.from({ length: decoders }, () => [])
  let stop = false
  try {
    const seqs = Array.from({ length: decoders }, () => context.getSequence())
    const prompted = context.getSequence()
    await Promise.all(
      seqs.map((s, k) => s.evaluateWithoutGeneratingNewTokens(promptOf(k, DECODER_PROMPT - 1, vocab) as Token[])),
    )
    const decoding = seqs.map(async (s, k) => {
      let i = 0
      for await (const _ of s.evaluate(promptOf(k, DECODER_PROMPT, vocab).slice(-1) as Token[], { temperature: 0 })) {
        times[k]?.push(performance.now())
        if (stop || ++i >= MAX_TOKENS) break
      }
    })
    await untilEach(
      times,
      times.map(() => warm),
    )
    const t0 = performance.now()
    await prompted.evaluateWithoutGeneratingNewTokens(PROMPT as Token[])
    const t1 = performance.now()
    await untilEach(
      times,
      times.map((t) => t.length + 2),
    )
    stop = true
    await Promise.all(decoding)
    return { gaps: gapsIn(times, t0, t1), promptMs: t1 - t0 }
  } finally {
    stop = true
    await context.dispose()
  }
}

emit({
  bench: 'mixed-load',
  model: shape,
  path,
  threads,
  decoders,
  prompt: promptLen,
  chunk,
  rounds,
  loadavg: loadavg(),
})
await ourRun('quiet') // warm-up: page in the weights
const modes: Mode[] = ['quiet', 'whole', 'chunked', 'llama_cpp']
const per: Record<Mode, { p50: number[]; p99: number[]; promptMs: number[] }> = {
  quiet: { p50: [], p99: [], promptMs: [] },
  whole: { p50: [], p99: [], promptMs: [] },
  chunked: { p50: [], p99: [], promptMs: [] },
  llama_cpp: { p50: [], p99: [], promptMs: [] },
}
for (let r = 0; r < rounds; r++) {
  for (const mode of r % 2 === 0 ? modes : [...modes].reverse()) {
    const run = mode === 'llama_cpp' ? await llamaRun() : await ourRun(mode)
    const p50 = quantile(run.gaps, 0.5)
    const p99 = quantile(run.gaps, 0.99)
    per[mode].p50.push(p50)
    per[mode].p99.push(p99)
    per[mode].promptMs.push(run.promptMs)
    emit({
      round: r + 1,
      mode,
      gaps: run.gaps.length,
      p50_ms: p50,
      p99_ms: p99,
      prompt_ms: run.promptMs,
      loadavg: loadavg()[0],
    })
  }
}
const medians = Object.fromEntries(
  modes.map((m) => [m, { p50_ms: median(per[m].p50), p99_ms: median(per[m].p99), prompt_ms: median(per[m].promptMs) }]),
) as Record<Mode, { p50_ms: number; p99_ms: number; prompt_ms: number }>
for (const m of modes) emit({ median: m, ...medians[m] })
const quietP50 = medians.quiet.p50_ms
emit({
  bench: 'mixed-load',
  model: shape,
  threads,
  decoders,
  prompt: promptLen,
  chunk,
  ratios: {
    // the bound: ≤ 2
    chunked_p99_over_quiet_p50: medians.chunked.p99_ms / quietP50,
    whole_p99_over_quiet_p50: medians.whole.p99_ms / quietP50,
    llama_cpp_p99_over_quiet_p50: medians.llama_cpp.p99_ms / quietP50,
    // what chunking costs the prompt itself (> 1: slower)
    chunked_prompt_over_whole: medians.chunked.prompt_ms / medians.whole.prompt_ms,
    chunked_prompt_over_llama_cpp: medians.chunked.prompt_ms / medians.llama_cpp.prompt_ms,
  },
  medians,
  loadavg: loadavg()[0],
})
ours.dispose()
await model.dispose()
