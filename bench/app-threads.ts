// npm run bench:app-threads — the app's chat at each runtime thread count, as a volunteer runs it: one
// process holding the app backend, its embedded tracker, its host and its swarm client (the UI talks to
// it as the Electron main process or the browser mode does). Baseline: node-llama-cpp on the whole model
// at 1 thread in the same process and run. Rounds alternate baseline and every thread count; each round
// is printed with the load average; the last JSON line holds the medians and the ratios (ms per step of
// the baseline ÷ ours: above 1 is faster than llama.cpp alone).
//
// Options: --model <gguf> (default stories260K)  --threads 1,2  --tokens 96  --rounds 3
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { LlamaCompletion } from 'node-llama-cpp'
import { AppBackend } from '../electron/backend/backend'
import { type AppEventData, readAppReply } from '../protocol'
import { STORIES_260K } from '../test/models'
import { sharedLlama } from '../text/tokenizer'

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback
}
const MODEL = arg('model', STORIES_260K)
const THREADS = arg('threads', '1,2').split(',').map(Number)
const TOKENS = Number(arg('tokens', '96'))
const ROUNDS = Number(arg('rounds', '3'))
const PROMPT = 'Once upon a time, there was a little girl who'
if (THREADS.some((t) => !Number.isSafeInteger(t) || t < 1) || !(TOKENS > 1) || !(ROUNDS >= 1)) {
  throw new Error('--threads takes whole numbers ≥ 1 (e.g. 1,2), --tokens > 1, --rounds ≥ 1')
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2
}
const round3 = (n: number) => Math.round(n * 1000) / 1000
const load = () => round3(loadavg()[0] ?? 0)

/** ms per decode step of node-llama-cpp on the whole model, 1 thread, greedy. */
async function baseline(): Promise<number> {
  const llama = await sharedLlama()
  const model = await llama.loadModel({ modelPath: MODEL, gpuLayers: 0 })
  const context = await model.createContext({ contextSize: 512, threads: 1 })
  try {
    const at: number[] = []
    await new LlamaCompletion({ contextSequence: context.getSequence() }).generateCompletion(PROMPT, {
      maxTokens: TOKENS,
      temperature: 0,
      onToken: (tokens) => {
        for (const _ of tokens) at.push(performance.now())
      },
    })
    return ((at.at(-1) ?? 0) - (at[0] ?? 0)) / Math.max(1, at.length - 1)
  } finally {
    await context.dispose()
    await model.dispose()
  }
}

/** ms per decode step of a chat in the app, its host at `threads`: the backend started afresh in its own data dir. */
async function app(threads: number): Promise<{ msPerStep: number; startS: number; tokens: number }> {
  const dir = await mkdtemp(join(tmpdir(), `neuron-app-threads-${threads}-`))
  const started = performance.now()
  const backend = await AppBackend.start({ dataDir: dir, trackerUrl: null, defaultModels: [MODEL], threads })
  try {
    const listed = readAppReply('models.list', await backend.call('models.list', {})).models[0]
    if (listed === undefined) throw new Error('the embedded swarm lists no model')
    const { modelId, nLayer } = listed
    // The volunteer hosts the whole model on this computer, then chats with it.
    const serving = new Promise<void>((resolve, reject) => {
      backend.onEvent((event: string, data: unknown) => {
        const status = data as AppEventData<'hosting.status'>
        if (event === 'hosting.status' && status.phase === 'serving') resolve()
        if (event === 'hosting.status' && status.error !== null) reject(new Error(status.error.message))
      })
    })
    readAppReply('hosting.start', await backend.call('hosting.start', { modelId, blocks: [0, nLayer] }))
    await serving
    // Serving starts before the tracker's probe of the new range has passed: until then a chat finds no route.
    const deadline = Date.now() + 120_000
    for (let attempt = 1; ; attempt++) {
      const at: number[] = []
      const chatId = `t${threads}-${attempt}`
      const ended = new Promise<string | null>((resolve) => {
        const off = backend.onEvent((event: string, data: unknown) => {
          const d = data as { chatId?: string; error?: { code: string; message: string } }
          if (d.chatId !== chatId) return
          if (event === 'chat.token') at.push(performance.now())
          if (event === 'chat.done' || event === 'chat.error') {
            off()
            resolve(event === 'chat.error' ? `${d.error?.code}: ${d.error?.message}` : null)
          }
        })
      })
      readAppReply(
        'chat.send',
        await backend.call('chat.send', {
          chatId,
          modelId,
          messages: [{ role: 'user', content: PROMPT }],
          maxTokens: TOKENS,
        }),
      )
      const error = await ended
      if (error === null) {
        // From the app's start to the first token it streamed.
        const startS = ((at[0] ?? Number.NaN) - started) / 1000
        return { msPerStep: ((at.at(-1) ?? 0) - (at[0] ?? 0)) / Math.max(1, at.length - 1), startS, tokens: at.length }
      }
      if (!error.startsWith('no_route') || Date.now() > deadline) throw new Error(`the chat failed: ${error}`)
      await new Promise((r) => setTimeout(r, 250))
    }
  } finally {
    await backend.close()
    await rm(dir, { recursive: true, force: true })
  }
}

console.log(`bench:app-threads: ${MODEL}, threads ${THREADS.join(', ')}, ${TOKENS} tokens, ${ROUNDS} rounds`)
const base: number[] = []
const ours = new Map<number, number[]>(THREADS.map((t) => [t, []]))
for (let round = 1; round <= ROUNDS; round++) {
  const ms = await baseline()
  base.push(ms)
  console.log(
    JSON.stringify({ round, run: 'node-llama-cpp', threads: 1, ms_per_step: round3(ms), load_average: load() }),
  )
  // Alternate the order of the thread counts too, so neither always runs right after the baseline.
  for (const threads of round % 2 ? THREADS : [...THREADS].reverse()) {
    const r = await app(threads)
    ours.get(threads)?.push(r.msPerStep)
    console.log(
      JSON.stringify({
        round,
        run: 'app',
        threads,
        ms_per_step: round3(r.msPerStep),
        tokens: r.tokens,
        first_token_s: round3(r.startS),
        load_average: load(),
      }),
    )
  }
}
const medians = Object.fromEntries(THREADS.map((t) => [t, round3(median(ours.get(t) ?? []))]))
console.log(
  JSON.stringify({
    bench: 'app-threads',
    model: MODEL,
    rounds: ROUNDS,
    baseline_ms_per_step: round3(median(base)),
    app_ms_per_step: medians,
    baseline_vs_app: Object.fromEntries(THREADS.map((t) => [t, round3(median(base) / (medians[t] ?? Number.NaN))])),
    load_average: load(),
  }),
)
