// npm run bench:runtime — ShardRuntime over all blocks vs node-llama-cpp on the same file and
// thread count, in the same run: decode tok/s (128 tokens after a 64-token prompt) and prefill
// tok/s (512 tokens in one batch). Then RSS after loading blocks [0, L/2) vs the whole model.
// One JSON line per measurement; the last line holds decode_ratio / prefill_ratio per case.
//
// Cases (SHAPES below, one entry each): a 1.1B llama (TinyLlama's shape), a Qwen3-30B-A3B-like MoE, a
// DeepSeek-V3-like MLA + MoE, a Qwen3.5-MoE (delta-net + full attention) and a GLM-5.2-like MLA + lightning
// indexer, each scaled to fit this machine (bench/models.ts).
//
// Options: --models llama,qwen3moe,deepseek2,qwen35moe,glm-dsa,deepseek4  --types q8_0,q4_0 (llama)  --moe-types
// q8_0,q4_K_M          --threads 1,2  --decode 128  --prompt 64  --prefill 512  --rounds 3  --tiny
import { spawnSync } from 'node:child_process'
import { loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { getLlama, LlamaLogLevel, type LlamaModel, type Token } from 'node-llama-cpp'
import type { GeneratedType, GenerateOptions } from '../gguf/generate'
import { ShardRuntime } from '../native'
import {
  benchModel,
  DEEPSEEK_MLA_BENCH,
  DEEPSEEK4_BENCH,
  GLM_DSA_BENCH,
  LLAMA_1B,
  QWEN3_MOE_BENCH,
  QWEN35_MOE_BENCH,
  wholeRuntime,
} from './models'

type BenchShape = Omit<GenerateOptions, 'type' | 'out'>

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback
}

/** Deterministic prompt tokens, past the special and byte tokens. */
function promptTokens(n: number, vocab: number, seed: number): number[] {
  let s = seed >>> 0
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return 259 + (s % (vocab - 259))
  })
}

function emit(record: object): void {
  process.stdout.write(`${JSON.stringify(record)}\n`)
}

/** One side of the comparison, loaded once per case; `decode` and `prefill` return seconds. */
type Side = { decode(): Promise<number>; prefill(): Promise<number>; close(): Promise<void> }

async function ourSide(
  path: string,
  nLayer: number,
  threads: number,
  prompt: number[],
  decode: number,
  prefill: number[],
): Promise<Side> {
  const rt = await wholeRuntime(path, nLayer, threads)
  const s = rt.openSession({ maxTokens: 1024 })
  await s.forward(Int32Array.from(prompt.slice(0, 8))) // warm-up: page in weights, size the compute buffers
  return {
    async decode() {
      s.truncate(0)
      await s.forward(Int32Array.from(prompt.slice(0, -1)))
      let next = prompt[prompt.length - 1] as number
      const t0 = performance.now()
      for (let i = 0; i < decode; i++) {
        await s.forward(Int32Array.of(next))
        next = s.sample({ temperature: 0 }).token
      }
      return (performance.now() - t0) / 1000
    },
    async prefill() {
      s.truncate(0)
      const t0 = performance.now()
      await s.forward(Int32Array.from(prefill))
      return (performance.now() - t0) / 1000
    },
    async close() {
      rt.dispose()
    },
  }
}

async function llamaSide(
  model: LlamaModel,
  threads: number,
  prompt: number[],
  decode: number,
  prefill: number[],
): Promise<Side> {
  const context = await model.createContext({
    contextSize: 1024,
    batchSize: 512,
    threads,
    flashAttention: true,
    sequences: 1,
  })
  const seq = context.getSequence()
  await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(0, 8) as Token[]) // warm-up
  return {
    async decode() {
      await seq.clearHistory()
      await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1) as Token[])
      let n = 0
      const t0 = performance.now()
      for await (const _ of seq.evaluate(prompt.slice(-1) as Token[], { temperature: 0 })) {
        if (++n >= decode) break
      }
      return (performance.now() - t0) / 1000
    },
    async prefill() {
      await seq.clearHistory()
      const t0 = performance.now()
      await seq.evaluateWithoutGeneratingNewTokens(prefill as Token[])
      return (performance.now() - t0) / 1000
    },
    async close() {
      await context.dispose()
    },
  }
}

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

/**
 * Rounds alternate between the two sides; each round is printed as it ends. Ratios come from the
 * medians; the best round is kept too, since on a shared 2-core machine any other process stalls
 * ggml's spinning threads and the best round is the one that ran alone.
 */
async function compare(label: object, ours: Side, llama: Side, rounds: number, decode: number, prefillLen: number) {
  const all: { side: 'ours' | 'llama_cpp'; decode_tps: number; prefill_tps: number }[] = []
  for (let r = 0; r < rounds; r++) {
    for (const [name, side] of [
      ['llama_cpp', llama],
      ['ours', ours],
    ] as const) {
      const rates = { decode_tps: decode / (await side.decode()), prefill_tps: prefillLen / (await side.prefill()) }
      all.push({ side: name, ...rates })
      emit({ ...label, round: r + 1, side: name, ...rates, loadavg: loadavg()[0] })
    }
  }
  const summary = (side: 'ours' | 'llama_cpp') => {
    const mine = all.filter((x) => x.side === side)
    return {
      decode_tps: median(mine.map((x) => x.decode_tps)),
      prefill_tps: median(mine.map((x) => x.prefill_tps)),
      best_decode_tps: Math.max(...mine.map((x) => x.decode_tps)),
      best_prefill_tps: Math.max(...mine.map((x) => x.prefill_tps)),
    }
  }
  return { ours: summary('ours'), llama_cpp: summary('llama_cpp') }
}

/** RSS growth of a fresh process that loads blocks [from, to), opens one 1024-token session and runs one step. */
function rssOf(path: string, blocks: [number, number], embed: boolean, head: boolean): number {
  const res = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      fileURLToPath(import.meta.url),
      '--rss-child',
      path,
      String(blocks[0]),
      String(blocks[1]),
      String(embed),
      String(head),
    ],
    { encoding: 'utf8' },
  )
  const line = res.stdout.trim().split('\n').pop() ?? ''
  if (res.status !== 0 || !line.startsWith('{')) throw new Error(`rss child failed: ${res.stderr}`)
  return (JSON.parse(line) as { rss_delta: number }).rss_delta
}

async function rssChild(): Promise<void> {
  const [path, from, to, embed, head] = process.argv.slice(process.argv.indexOf('--rss-child') + 1)
  // register backends first so their code pages are not counted as weights
  const before = process.memoryUsage().rss
  const rt = await ShardRuntime.load({
    artifacts: [path as string],
    blocks: [Number(from), Number(to)],
    embed: embed === 'true',
    head: head === 'true',
    threads: 1,
    device: 'cpu',
  })
  const s = rt.openSession({ maxTokens: 1024 })
  // weights mapped from the file are resident (and counted in RSS) once a step has touched them
  await s.forward(Int32Array.of(1))
  const info = rt.info()
  const after = process.memoryUsage().rss
  emit({ rss_delta: after - before, weight_bytes: info.weightBytes, kv_bytes: s.kvBytes })
  rt.dispose()
}

/** The shapes `--models` picks from, full size and `--tiny`. */
const SHAPES: Record<string, { full: BenchShape; tiny: BenchShape; types: string }> = {
  llama: {
    full: LLAMA_1B,
    tiny: { ...LLAMA_1B, blocks: 4, embd: 256, heads: 8, kvHeads: 4, ff: 512, vocab: 4096 },
    types: 'types',
  },
  qwen3moe: {
    full: QWEN3_MOE_BENCH,
    tiny: {
      ...QWEN3_MOE_BENCH,
      blocks: 2,
      embd: 512,
      heads: 8,
      kvHeads: 4,
      vocab: 4096,
      experts: 16,
      expertsUsed: 4,
      expertFf: 256,
    },
    types: 'moe-types',
  },
  deepseek2: {
    full: DEEPSEEK_MLA_BENCH,
    tiny: {
      ...DEEPSEEK_MLA_BENCH,
      blocks: 2,
      embd: 512,
      heads: 8,
      ff: 1024,
      vocab: 4096,
      experts: 16,
      expertsUsed: 4,
      expertFf: 256,
      expertGroups: 4,
      groupsUsed: 2,
      qLoraRank: 256,
      kvLoraRank: 256,
      ropeDim: 32,
      nopeDim: 64,
    },
    types: 'moe-types',
  },
  qwen35moe: {
    full: QWEN35_MOE_BENCH,
    tiny: {
      ...QWEN35_MOE_BENCH,
      blocks: 4,
      embd: 512,
      heads: 4,
      kvHeads: 2,
      ff: 256,
      vocab: 4096,
      experts: 16,
      expertsUsed: 4,
      expertFf: 256,
    },
    types: 'moe-types',
  },
  'glm-dsa': {
    full: GLM_DSA_BENCH,
    tiny: {
      ...GLM_DSA_BENCH,
      blocks: 4,
      embd: 512,
      heads: 8,
      ff: 1024,
      vocab: 4096,
      experts: 16,
      expertsUsed: 4,
      expertFf: 256,
      qLoraRank: 256,
      kvLoraRank: 256,
      ropeDim: 32,
      nopeDim: 64,
      indexerHeads: 4,
      indexerHeadSize: 64,
      indexerTopK: 32,
      fullIndexerInterval: 2,
    },
    types: 'moe-types',
  },
  deepseek4: {
    full: DEEPSEEK4_BENCH,
    tiny: {
      ...DEEPSEEK4_BENCH,
      blocks: 4,
      embd: 256,
      heads: 4,
      ff: 256,
      vocab: 4096,
      experts: 8,
      expertsUsed: 2,
      expertFf: 256,
      compressRatios: [0, 4, 128, 4],
      slidingWindow: 8,
    },
    types: 'moe-types',
  },
}

async function main(): Promise<void> {
  const defaults: Record<string, string> = { types: 'q8_0,q4_0', 'moe-types': 'q8_0,q4_K_M' }
  const models = arg('models', Object.keys(SHAPES).join(',')).split(',')
  const threadList = arg('threads', '1,2').split(',').map(Number)
  const decode = Number(arg('decode', '128'))
  const promptLen = Number(arg('prompt', '64'))
  const prefillLen = Number(arg('prefill', '512'))
  const rounds = Number(arg('rounds', '3'))
  const tiny = process.argv.includes('--tiny')

  const loadStart = loadavg()
  const llama = await getLlama({
    gpu: false,
    build: 'never',
    logLevel: LlamaLogLevel.error,
    maxThreads: Math.max(...threadList),
  })
  const cases: object[] = []
  let memory: object | undefined
  for (const name of models) {
    const entry = SHAPES[name]
    if (!entry) throw new Error(`--models takes ${Object.keys(SHAPES).join(', ')}, not ${name}`)
    const shape = tiny ? entry.tiny : entry.full
    for (const type of arg(entry.types, defaults[entry.types] as string).split(',') as GeneratedType[]) {
      const path = await benchModel(type, shape)
      const prompt = promptTokens(promptLen, shape.vocab, 1)
      const prefill = promptTokens(prefillLen, shape.vocab, 2)
      const model = await llama.loadModel({ modelPath: path })
      try {
        for (const threads of threadList) {
          const llamaSideOf = await llamaSide(model, threads, prompt, decode, prefill)
          const ourSideOf = await ourSide(path, shape.blocks, threads, prompt, decode, prefill)
          try {
            const label = { model: name, type, threads }
            const { ours, llama_cpp } = await compare(label, ourSideOf, llamaSideOf, rounds, decode, prefill.length)
            const record = {
              ...label,
              ours,
              llama_cpp,
              decode_ratio: ours.decode_tps / llama_cpp.decode_tps,
              prefill_ratio: ours.prefill_tps / llama_cpp.prefill_tps,
            }
            emit(record)
            cases.push(record)
          } finally {
            await ourSideOf.close()
            await llamaSideOf.close()
          }
        }
      } finally {
        await model.dispose()
      }
      if (!memory) {
        const half = Math.floor(shape.blocks / 2)
        const firstHalf = rssOf(path, [0, half], true, false)
        const whole = rssOf(path, [0, shape.blocks], true, true)
        memory = {
          model: name,
          type,
          blocks: [0, half],
          rss_first_half: firstHalf,
          rss_whole: whole,
          ratio: firstHalf / whole,
        }
        emit({ memory })
      }
    }
  }
  await llama.dispose()
  // other processes on a small machine stall ggml's spinning threads: say how busy it was
  emit({
    bench: 'runtime',
    models,
    tiny,
    decode,
    prompt: promptLen,
    prefill: prefillLen,
    rounds,
    loadavg: [loadStart, loadavg()],
    cases,
    memory,
  })
}

if (process.argv.includes('--rss-child')) await rssChild()
else await main()
