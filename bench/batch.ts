// npm run bench:batch — continuous batching on one host: 1, 2, 4, 8 concurrent greedy sessions stepping through the
// host's StepBatcher over one ShardRuntime (the shard server's serving path without the socket), against
// two baselines, same model, same thread count, same run: llama.cpp's own `llama-batched-bench` (n sequences decoded
// in one llama_decode a step, built from the bundled source on node-llama-cpp's prebuilt CPU kernels:
// bench/llama-tools.ts), and node-llama-cpp's batched decode of as many sequences in one context (`sequences: n`, one
// getSequence() each). Aggregate decode tok/s (every session's tokens over the wall time; llama-batched-bench's S_TG).
// Rounds alternate the sides; every round is printed with the load average; the last JSON line holds the medians
// and ratios per session count (ours ÷ each baseline, and each side at n ÷ itself at 1: a baseline that does not batch
// shows there).
//
// Options: --model <gguf> (default: the 1.1B bench llama if cached, else a small generated llama)  --sessions 1,2,4,8
//          --threads 1  --decode 64  --prompt 16  --rounds 3  --llama-dispatch-ms 5 (0: node-llama-cpp's default)
//          --no-batched-bench (node-llama-cpp alone, where llama.cpp's tools cannot be built)
import { execFile } from 'node:child_process'
import { loadavg } from 'node:os'
import { promisify } from 'node:util'
import type { Token } from 'node-llama-cpp'
import { StepBatcher } from '../host/serving/step-batcher'
import { loadBatchBench, promptOf } from './batch-models'
import { llamaTools } from './llama-tools'

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback
}

function emit(record: object): void {
  process.stdout.write(`${JSON.stringify(record)}\n`)
}

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

const threads = Number(arg('threads', '1'))
const decode = Number(arg('decode', '64'))
const promptLen = Number(arg('prompt', '16'))
const rounds = Number(arg('rounds', '3'))
const counts = arg('sessions', '1,2,4,8').split(',').map(Number)
/** How long node-llama-cpp waits to gather its sequences' tokens into one batch (0: its default, the next cycle). */
const LLAMA_DISPATCH_MS = Number(arg('llama-dispatch-ms', '5'))

const withBatchedBench = !process.argv.includes('--no-batched-bench')

const { path, shape, ours, vocab, model } = await loadBatchBench(arg('model', ''), threads)
const tools = withBatchedBench ? await llamaTools((l) => process.stderr.write(`[bench:batch] ${l}\n`)) : undefined
const batcher = new StepBatcher(ours)
if (!batcher.batching)
  throw new Error(`${ours.info().arch} cannot batch; bench:batch needs a family with plain K and V caches`)

/** n sessions decoding at once through the batcher; seconds for `decode` tokens each after their prompts. */
async function oursRound(n: number): Promise<number> {
  const sessions = Array.from({ length: n }, () => ours.openSession({ maxTokens: promptLen + decode + 8 }))
  try {
    // prompts first (batched too), then time the decode
    const next = await Promise.all(
      sessions.map(async (s, k) => {
        await batcher.forward(s, Int32Array.from(promptOf(k, promptLen, vocab)), {})
        return s.sample({ temperature: 0 }).token
      }),
    )
    const t0 = performance.now()
    await Promise.all(
      sessions.map(async (s, k) => {
        let token = next[k] as number
        for (let i = 0; i < decode; i++) {
          await batcher.forward(s, Int32Array.of(token), {})
          token = s.sample({ temperature: 0 }).token
        }
      }),
    )
    return (performance.now() - t0) / 1000
  } finally {
    for (const s of sessions) s.close()
  }
}

async function llamaRound(n: number): Promise<number> {
  const context = await model.createContext({
    contextSize: n * (promptLen + decode + 16),
    batchSize: 512,
    threads,
    flashAttention: true,
    sequences: n,
    // node-llama-cpp batches what is queued when it dispatches: on the next event-loop cycle by default, when most
    // sequences have not yet sampled and queued their next token, so they decode nearly alone (1.1B q8_0, 1 thread,
    // 8 sequences: 1.28× its 1-sequence rate; waiting 1 ms: 1.29×; 5 ms: 1.64×). Waiting lets more of them into
    // each batch; the baseline's own scaling is printed (scaling_llama_cpp) so a baseline that does not batch shows.
    ...(LLAMA_DISPATCH_MS > 0
      ? { batching: { dispatchSchedule: (dispatch: () => void) => void setTimeout(dispatch, LLAMA_DISPATCH_MS) } }
      : {}),
  })
  try {
    const seqs = Array.from({ length: n }, () => context.getSequence())
    await Promise.all(
      seqs.map((s, k) => s.evaluateWithoutGeneratingNewTokens(promptOf(k, promptLen - 1, vocab) as Token[])),
    )
    const t0 = performance.now()
    await Promise.all(
      seqs.map(async (s, k) => {
        let i = 0
        for await (const _ of s.evaluate(promptOf(k, promptLen, vocab).slice(-1) as Token[], { temperature: 0 }))
          if (++i >= decode) break
      }),
    )
    return (performance.now() - t0) / 1000
  } finally {
    await context.dispose()
  }
}

/** llama-batched-bench's decode of n sequences (after their own prompts), seconds for `decode` tokens each. */
async function batchedBenchRound(n: number): Promise<number> {
  if (tools === undefined) throw new Error('llama-batched-bench was not built')
  const args = [
    ...['-m', path, '-c', String(n * (promptLen + decode + 16)), '-b', '2048', '-ub', '512', '-fa', 'on'],
    ...[
      '-npp',
      String(promptLen),
      '-ntg',
      String(decode),
      '-npl',
      String(n),
      '-t',
      String(threads),
      '-tb',
      String(threads),
    ],
    ...['--output-format', 'jsonl'],
  ]
  const { stdout, stderr } = await promisify(execFile)(tools.batchedBench, args, {
    env: tools.env,
    maxBuffer: 64 << 20,
  })
  const line = `${stdout}\n${stderr}`.split('\n').find((l) => l.startsWith('{') && l.includes('"speed_tg"'))
  if (line === undefined) throw new Error(`llama-batched-bench printed no result: ${(stdout + stderr).slice(-2000)}`)
  const row = JSON.parse(line) as { pl: number; tg: number; t_tg: number }
  if (row.pl !== n || row.tg !== decode)
    throw new Error(`llama-batched-bench ran ${row.pl}×${row.tg}, not ${n}×${decode}`)
  return row.t_tg
}

emit({ bench: 'batch', model: shape, path, threads, decode, prompt: promptLen, rounds, loadavg: loadavg() })
await oursRound(1) // warm-up: page in the weights
interface Result {
  ours_tps: number
  llama_cpp_tps: number
  ratio: number
  batched_bench_tps?: number
  ratio_batched_bench?: number
}
const results: Record<string, Result> = {}
const sides = withBatchedBench ? (['batched_bench', 'llama_cpp', 'ours'] as const) : (['llama_cpp', 'ours'] as const)
for (const n of counts) {
  const rates: Record<(typeof sides)[number], number[]> = { ours: [], llama_cpp: [], batched_bench: [] }
  for (let r = 0; r < rounds; r++) {
    for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
      const seconds =
        side === 'ours' ? await oursRound(n) : side === 'llama_cpp' ? await llamaRound(n) : await batchedBenchRound(n)
      const tps = (n * decode) / seconds
      rates[side].push(tps)
      emit({ sessions: n, round: r + 1, side, aggregate_decode_tps: tps, loadavg: loadavg()[0] })
    }
  }
  const o = median(rates.ours)
  const l = median(rates.llama_cpp)
  const b = withBatchedBench ? median(rates.batched_bench) : undefined
  results[n] = {
    ours_tps: o,
    llama_cpp_tps: l,
    ratio: o / l,
    ...(b === undefined ? {} : { batched_bench_tps: b, ratio_batched_bench: o / b }),
  }
  emit({ sessions: n, median_ours_tps: o, median_llama_cpp_tps: l, median_batched_bench_tps: b, ratio: o / l })
}
const one = results[1]?.ours_tps
const scaling = (tps: (r: Result) => number | undefined) =>
  results[1]
    ? Object.fromEntries(
        Object.entries(results).map(([n, r]) => [
          n,
          (tps(r) ?? Number.NaN) / (tps(results[1] as Result) ?? Number.NaN),
        ]),
      )
    : {}
emit({
  bench: 'batch',
  model: shape,
  threads,
  batches: batcher.stats.batches,
  largest_batch: batcher.stats.largest,
  ratios: Object.fromEntries(Object.entries(results).map(([n, r]) => [n, r.ratio])),
  ...(withBatchedBench
    ? {
        ratios_batched_bench: Object.fromEntries(Object.entries(results).map(([n, r]) => [n, r.ratio_batched_bench])),
        scaling_batched_bench: scaling((r) => r.batched_bench_tps),
      }
    : {}),
  scaling_vs_one_session: one ? scaling((r) => r.ours_tps) : {},
  scaling_llama_cpp: scaling((r) => r.llama_cpp_tps),
  llama_dispatch_ms: LLAMA_DISPATCH_MS,
  tps: results,
  loadavg: loadavg()[0],
})
ours.dispose()
await model.dispose()
