// npm run bench:load — many concurrent chats over a swarm of real processes on loopback: a `neuron tracker` and
// `neuron host`s splitting the model (every route has one hop per host), each chat its own client key (a user of its
// own) with its own prompt, greedy, a fixed number of tokens. Every chat's tokens are checked against that prompt's
// greedy tokens from node-llama-cpp on the whole model (same threads), and against the same chat run alone through the
// same swarm. Baseline, same run: the same chats one at a time. Rounds alternate the two; every round is printed with
// the load average; the last JSON line holds the medians and the headline ratio (concurrent ÷ sequential tok/s).
//
// Options: --chats 100  --tokens 32  --rounds 3  --hosts 4  --threads 1  --model <gguf> (default stories260K)
//          --max-sessions <per host; default chats + 4>  --clients <keys; default one per chat>  --timeout-ms 180000
//          --seam f16|f32 (how hidden states cross hops; default f16, the model's)  --audit-rate F (the tracker's)
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import type { Token } from 'node-llama-cpp'
import { SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import { STORIES_260K } from '../test/models'
import { sharedLlama } from '../text/tokenizer'
import { startLoadSwarm } from './load-swarm'
import { BENCH_DIR } from './models'

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback
}

function intArg(name: string, fallback: number): number {
  const value = Number(arg(name, String(fallback)))
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`--${name} takes a whole number of at least 1, not ${arg(name, '')}`)
  return value
}

function emit(record: object): void {
  process.stdout.write(`${JSON.stringify(record)}\n`)
}

const chats = intArg('chats', 100)
const tokens = intArg('tokens', 32)
const rounds = intArg('rounds', 3)
const hosts = intArg('hosts', 4)
const threads = intArg('threads', 1)
const maxSessions = intArg('max-sessions', chats + 4)
const clientCount = Math.min(chats, intArg('clients', chats))
const timeoutMs = intArg('timeout-ms', 180_000)
const model = arg('model', STORIES_260K)
const seam = arg('seam', 'f16') as 'f16' | 'f32'
if (seam !== 'f16' && seam !== 'f32') throw new Error(`--seam is f16 or f32, not ${seam}`)

const NAMES = ['Lily', 'Tom', 'Sue', 'Ben', 'Max', 'Mia', 'Sam', 'Anna', 'Tim', 'Lucy']
const THINGS = [
  'a dog',
  'a red ball',
  'a big tree',
  'a little bird',
  'a toy car',
  'a cat',
  'the sun',
  'a boat',
  'a cake',
  'a garden',
]

/** Chat k's prompt: a different story opening for each of the first 100, then numbered. */
function promptText(k: number): string {
  const opening = `Once upon a time, ${NAMES[k % 10]} saw ${THINGS[Math.floor(k / 10) % 10]}.`
  return k < 100 ? opening : `Story ${Math.floor(k / 100)}. ${opening}`
}

/** Nearest-rank percentile of `xs` (0..100); NaN for none. */
function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number
}

const median = (xs: readonly number[]) => percentile(xs, 50)
const round2 = (x: number) => Math.round(x * 100) / 100

interface ChatRun {
  readonly chat: number
  readonly tokens: number[]
  /** From asking to the first token: route, opening every hop, prefill. */
  ttftMs: number
  /** Between consecutive tokens of this chat, ms. */
  readonly gapsMs: number[]
  failovers: number
  error?: string
}

/** One chat, greedy, `tokens` long, given up after `timeoutMs`. */
async function chat(client: SwarmClient, modelId: string, k: number, prompt: readonly number[]): Promise<ChatRun> {
  const run: ChatRun = { chat: k, tokens: [], ttftMs: Number.NaN, gapsMs: [], failovers: 0 }
  const abort = new AbortController()
  let timer: NodeJS.Timeout | undefined
  const started = performance.now()
  const generation = (async () => {
    const stream = client.generate({
      modelId,
      prompt,
      maxTokens: tokens,
      stopAtEog: false,
      sampling: { temperature: 0 },
      hiddenDtype: seam,
      signal: abort.signal,
    })
    let last = started
    let next = await stream.next()
    while (!next.done) {
      const now = performance.now()
      if (run.tokens.length === 0) run.ttftMs = now - started
      else run.gapsMs.push(now - last)
      last = now
      run.tokens.push(next.value.token)
      next = await stream.next()
    }
    run.failovers = next.value.failovers.length
  })()
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      abort.abort()
      reject(new Error(`no answer within ${timeoutMs} ms (${run.tokens.length} of ${tokens} tokens)`))
    }, timeoutMs)
  })
  try {
    await Promise.race([generation, timeout])
    if (run.tokens.length < tokens) run.error = `ended after ${run.tokens.length} of ${tokens} tokens`
  } catch (error) {
    generation.catch(() => {}) // still running after a timeout: its end is no longer awaited
    run.error =
      error instanceof Error ? `${(error as { code?: string }).code ?? error.name}: ${error.message}` : String(error)
  } finally {
    clearTimeout(timer)
  }
  return run
}

/** Where `got` first differs from `want`, or -1. */
function firstDifference(want: readonly number[], got: readonly number[]): number {
  for (let i = 0; i < Math.max(want.length, got.length); i++) if (want[i] !== got[i]) return i
  return -1
}

const work = await mkdtemp(join(BENCH_DIR, 'load-'))
emit({
  bench: 'load',
  model,
  chats,
  tokens,
  rounds,
  hosts,
  threads,
  seam,
  max_sessions: maxSessions,
  clients: clientCount,
  loadavg: loadavg(),
})

// The oracle first, alone on the machine: node-llama-cpp on the whole model, each prompt from an empty context.
const llama = await sharedLlama()
const whole = await llama.loadModel({ modelPath: model, gpuLayers: 0 })
const prompts = Array.from({ length: chats }, (_, k) => [...whole.tokenize(promptText(k), true)] as number[])
const oracle: number[][] = []
{
  const context = await whole.createContext({
    contextSize: Math.max(...prompts.map((p) => p.length)) + tokens + 8,
    threads,
    sequences: 1,
  })
  const sequence = context.getSequence()
  for (const prompt of prompts) {
    await sequence.clearHistory()
    const out: number[] = []
    for await (const t of sequence.evaluate(prompt as Token[], { temperature: 0, yieldEogToken: true })) {
      out.push(t)
      if (out.length >= tokens) break
    }
    oracle.push(out)
  }
  await context.dispose()
  await whole.dispose()
}

const auditRate = arg('audit-rate', '')
const swarm = await startLoadSwarm({
  work,
  model,
  hosts,
  threads,
  maxSessions,
  clients: clientCount,
  ...(auditRate === '' ? {} : { auditRate }),
})
const modelId = swarm.manifest.modelId
const clients: SwarmClient[] = []
const summary: Record<'sequential' | 'concurrent', { tps: number[]; gapsMs: number[]; ttftMs: number[] }> = {
  sequential: { tps: [], gapsMs: [], ttftMs: [] },
  concurrent: { tps: [], gapsMs: [], ttftMs: [] },
}
let failed = 0
let mismatched = 0
let unequalToSolo = 0
let lastSolo: number[][] | undefined
try {
  for (let i = 0; i < clientCount; i++)
    clients.push(await SwarmClient.connect(swarm.trackerUrl, NodeIdentity.generate()))
  await Promise.all(clients.map((c) => c.tokenizer(modelId)))
  const warm = await chat(clients[0] as SwarmClient, modelId, 0, prompts[0] as number[])
  if (warm.error !== undefined) throw new Error(`the warm-up chat failed: ${warm.error}\n${swarm.logs()}`)

  const clientOf = (k: number) => clients[k % clientCount] as SwarmClient
  const sides = {
    sequential: async () => {
      const runs: ChatRun[] = []
      for (let k = 0; k < chats; k++) runs.push(await chat(clientOf(k), modelId, k, prompts[k] as number[]))
      return runs
    },
    concurrent: () => Promise.all(prompts.map((p, k) => chat(clientOf(k), modelId, k, p))),
  }
  for (let r = 0; r < rounds; r++) {
    // ABBA: neither side always runs on the machine the other just warmed
    const order = r % 2 === 0 ? (['sequential', 'concurrent'] as const) : (['concurrent', 'sequential'] as const)
    for (const side of order) {
      const cpu0 = { ours: process.cpuUsage(), swarm: swarm.cpuSeconds() }
      const t0 = performance.now()
      const runs = await sides[side]()
      const seconds = (performance.now() - t0) / 1000
      const cpu1 = { ours: process.cpuUsage(cpu0.ours), swarm: swarm.cpuSeconds() }
      const done = runs.filter((c) => c.error === undefined)
      const produced = runs.reduce((s, c) => s + c.tokens.length, 0)
      const gaps = done.flatMap((c) => c.gapsMs)
      const ttft = done.map((c) => c.ttftMs)
      const wrong = runs.filter(
        (c) => c.error === undefined && firstDifference(oracle[c.chat] as number[], c.tokens) >= 0,
      )
      if (side === 'sequential') lastSolo = runs.map((c) => c.tokens)
      const notSolo =
        side === 'concurrent' && lastSolo !== undefined
          ? runs.filter((c) => c.error === undefined && firstDifference(lastSolo?.[c.chat] ?? [], c.tokens) >= 0)
          : []
      failed += runs.length - done.length
      mismatched += wrong.length
      unequalToSolo += notSolo.length
      summary[side].tps.push(produced / seconds)
      summary[side].gapsMs.push(...gaps)
      summary[side].ttftMs.push(...ttft)
      emit({
        round: r + 1,
        side,
        completed: done.length,
        failed: runs.length - done.length,
        tokens: produced,
        seconds: round2(seconds),
        aggregate_tps: round2(produced / seconds),
        per_token_ms_p50: round2(percentile(gaps, 50)),
        per_token_ms_p99: round2(percentile(gaps, 99)),
        ttft_ms_p50: round2(percentile(ttft, 50)),
        ttft_ms_p99: round2(percentile(ttft, 99)),
        failovers: runs.reduce((s, c) => s + c.failovers, 0),
        // where the work went: CPU seconds of the clients (this process), the tracker and each host
        cpu_s: {
          clients: round2((cpu1.ours.user + cpu1.ours.system) / 1e6),
          ...(cpu0.swarm === undefined || cpu1.swarm === undefined
            ? {}
            : {
                tracker: round2(cpu1.swarm.tracker - cpu0.swarm.tracker),
                hosts: cpu1.swarm.hosts.map((s, i) => round2(s - (cpu0.swarm?.hosts[i] ?? 0))),
              }),
        },
        loadavg: loadavg()[0],
      })
      // Every failure and every mismatch by prompt: each is a bug to chase.
      const errors = new Map<string, number[]>()
      for (const c of runs) if (c.error !== undefined) errors.set(c.error, [...(errors.get(c.error) ?? []), c.chat])
      for (const [error, which] of errors) emit({ round: r + 1, side, failed_chats: which, error })
      for (const c of wrong) {
        const at = firstDifference(oracle[c.chat] as number[], c.tokens)
        emit({
          round: r + 1,
          side,
          mismatch: {
            chat: c.chat,
            prompt: promptText(c.chat),
            at,
            llama_cpp: oracle[c.chat]?.slice(at, at + 4),
            got: c.tokens.slice(at, at + 4),
          },
        })
      }
      for (const c of notSolo)
        emit({
          round: r + 1,
          side,
          unequal_to_solo: { chat: c.chat, at: firstDifference(lastSolo?.[c.chat] ?? [], c.tokens) },
        })
    }
  }
} finally {
  for (const c of clients) c.close()
  await swarm.close()
  await rm(work, { recursive: true, force: true })
}

const seqTps = median(summary.sequential.tps)
const concTps = median(summary.concurrent.tps)
emit({
  bench: 'load',
  model,
  chats,
  tokens,
  hosts,
  threads,
  rounds,
  all_completed: failed === 0,
  failed_chats: failed,
  llama_cpp_mismatches: mismatched,
  unequal_to_solo: unequalToSolo,
  concurrent_tps: round2(concTps),
  sequential_tps: round2(seqTps),
  concurrent_over_sequential: round2(concTps / seqTps),
  per_token_ms_p50: round2(percentile(summary.concurrent.gapsMs, 50)),
  per_token_ms_p99: round2(percentile(summary.concurrent.gapsMs, 99)),
  ttft_ms_p50: round2(percentile(summary.concurrent.ttftMs, 50)),
  ttft_ms_p99: round2(percentile(summary.concurrent.ttftMs, 99)),
  sequential_per_token_ms_p50: round2(percentile(summary.sequential.gapsMs, 50)),
  sequential_per_token_ms_p99: round2(percentile(summary.sequential.gapsMs, 99)),
  loadavg: loadavg()[0],
})
