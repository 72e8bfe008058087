// npm run bench:conversation — a 6-turn conversation growing to about 2 000 tokens, through a route of 3 hosts (real
// processes on loopback): the time to each turn's first token with the session kept between turns (only the new turn
// is sent and prefilled), against node-llama-cpp's LlamaChatSession on the whole model in this process (which keeps
// its context between prompts), and against the same route starting every turn anew (as before conversations kept
// their cache). Rounds alternate the three (`--rounds N`, default 3); each run prints a line with the load average,
// the last line holds the medians and the ratios.

import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { LlamaChatSession } from 'node-llama-cpp'
import type { GenerationSummary } from '../client/generation/request'
import { SwarmClient } from '../client/swarm-client'
import { packModel } from '../gguf/pack'
import { publishModel, readManifest } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { type ChatMessage, splitBlocks } from '../protocol'
import type { NeuronProcess } from '../test/processes'
import { renderChat } from '../text/chat-template'
import { sharedLlama } from '../text/tokenizer'
import { BENCH_DIR, benchModel, LLAMA_1B, LLAMA_100M } from './models'
import { median, startSeededHost } from './seeded-host'
import { startTrackerProcess } from './tracker-process'

// `--model 100m`: a ~100M llama, for a quick run; default TinyLlama's shape (1.1B, q8_0), as bench:route.
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    threads: { type: 'string', default: '1' },
    model: { type: 'string', default: '1b' },
  },
})
const ROUNDS = Number(values.rounds)
const THREADS = Number(values.threads)
const TURNS = 6
const ANSWER_TOKENS = 24
const HOPS = 3
/** Positions the conversation's session reserves: six turns of about 440 tokens and their answers. */
const POSITIONS = 3072

const shape = values.model === '100m' ? LLAMA_100M : LLAMA_1B
const source = await benchModel('q8_0', shape)
const packed = join(BENCH_DIR, values.model === '100m' ? 'packed-llama-100m-q8_0' : 'packed-llama-1b-q8_0')
if (!existsSync(packed)) await packModel({ source, out: packed, blocksPerArtifact: 1 })
const manifest = await readManifest(packed)

/** Turn k's user message: about 330 tokens (the bench models' vocabulary) of plain sentences, different each turn. */
function userMessage(turn: number): string {
  const words = ['the', 'river', 'carried', 'small', 'boats', 'past', 'old', 'mills', 'while', 'children', 'counted']
  const sentences: string[] = []
  for (let i = 0; i < 9; i++) {
    const w = (j: number) => words[(turn * 7 + i * 3 + j) % words.length]
    sentences.push(`Turn ${turn + 1}, line ${i + 1}: ${w(0)} ${w(1)} ${w(2)} ${w(3)} ${w(4)} ${w(5)}.`)
  }
  return sentences.join(' ')
}

type Run = { ttftMs: number[]; cached: number[]; prompt: number[] }

// Baseline: llama.cpp on the whole model in this process, its chat session keeping its context between prompts.
const llama = await sharedLlama()
const model = await llama.loadModel({ modelPath: source, gpuLayers: 0 })
const context = await model.createContext({ contextSize: 4096, threads: THREADS })

async function baseline(): Promise<Run> {
  const sequence = context.getSequence()
  // no system prompt (LlamaChatSession's default adds one): both sides prefill the same conversation
  const session = new LlamaChatSession({ contextSequence: sequence, systemPrompt: '' })
  const run: Run = { ttftMs: [], cached: [], prompt: [] }
  try {
    for (let turn = 0; turn < TURNS; turn++) {
      const started = performance.now()
      let first = 0
      await session.prompt(userMessage(turn), {
        maxTokens: ANSWER_TOKENS,
        temperature: 0,
        onTextChunk: () => {
          if (first === 0) first = performance.now()
        },
      })
      run.ttftMs.push((first || performance.now()) - started)
      run.prompt.push(sequence.contextTokens.length)
    }
  } finally {
    session.dispose()
    sequence.dispose()
  }
  return run
}

/** One conversation through the route: kept between turns (`kept`), or every turn a new session from zero. */
async function throughRoute(client: SwarmClient, kept: boolean): Promise<Run> {
  const tokenizer = await client.tokenizer(manifest.modelId)
  const messages: ChatMessage[] = []
  const conversation = client.conversation({ positions: POSITIONS })
  const run: Run = { ttftMs: [], cached: [], prompt: [] }
  try {
    for (let turn = 0; turn < TURNS; turn++) {
      messages.push({ role: 'user', content: userMessage(turn) })
      const request = {
        modelId: manifest.modelId,
        prompt: renderChat(tokenizer, messages),
        maxTokens: ANSWER_TOKENS,
        stopAtEog: false,
      }
      const started = performance.now()
      const tokens = kept ? conversation.turn(request) : client.generate(request)
      let first = 0
      let text = ''
      let next = await tokens.next()
      while (!next.done) {
        if (first === 0) first = performance.now()
        text += next.value.text
        next = await tokens.next()
      }
      const s: GenerationSummary = next.value
      run.ttftMs.push(first - started)
      run.cached.push(s.cachedTokens)
      run.prompt.push(s.promptTokens)
      messages.push({ role: 'assistant', content: text })
    }
  } finally {
    await conversation.close()
  }
  return run
}

const work = await mkdtemp(join(BENCH_DIR, 'conversation-'))
const processes: NeuronProcess[] = []
const tracker = await startTrackerProcess({
  dbPath: ':memory:',
  newKeyGrantMicro: 1_000_000_000,
  grantWorkBits: 0,
  grantsPerPrefixPerDay: 1_000_000,
  checks: { probationProbeEveryMs: 3_600_000, probationProbes: 0 },
})
const publication = await publishModel(packed, tracker.url, NodeIdentity.generate(), join(work, 'publisher'))
const runs = { baseline: [] as Run[], kept: [] as Run[], anew: [] as Run[] }
try {
  for (const [i, blocks] of splitBlocks(manifest.nLayer, HOPS).entries()) {
    const host = await startSeededHost({
      trackerUrl: tracker.url,
      manifest,
      packed,
      dataDir: join(work, `host${i}`),
      blocks,
      threads: THREADS,
    })
    processes.push(host)
    await host.waitFor(/ ready blocks/, 300_000)
  }
  const client = await SwarmClient.connect(tracker.url, NodeIdentity.generate())
  await throughRoute(client, true) // warm-up: tokenizer, first connections
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run] of [
      ['LlamaChatSession', () => baseline()],
      ['route of 3, kept', () => throughRoute(client, true)],
      ['route of 3, anew', () => throughRoute(client, false)],
    ] as const) {
      const r = await run()
      runs[name.endsWith('kept') ? 'kept' : name.endsWith('anew') ? 'anew' : 'baseline'].push(r)
      console.log(
        JSON.stringify({
          round,
          run: name,
          ttft_ms: r.ttftMs.map((t) => Math.round(t)),
          cached_tokens: r.cached,
          prompt_tokens: r.prompt,
          load_average: loadavg()[0],
        }),
      )
    }
  }
  client.close()
  const turnMedian = (list: Run[], turn: number) => median(list.map((r) => r.ttftMs[turn] ?? Number.NaN))
  const ours1 = turnMedian(runs.kept, 0)
  const ours6 = turnMedian(runs.kept, TURNS - 1)
  const theirs6 = turnMedian(runs.baseline, TURNS - 1)
  const anew6 = turnMedian(runs.anew, TURNS - 1)
  console.log(
    JSON.stringify({
      bench: 'conversation',
      model: source,
      threads: THREADS,
      hops: HOPS,
      turns: TURNS,
      prompt_tokens_turn_6: runs.kept[0]?.prompt[TURNS - 1],
      ttft_ms_kept: Array.from({ length: TURNS }, (_, t) => Math.round(turnMedian(runs.kept, t))),
      ttft_ms_anew: Array.from({ length: TURNS }, (_, t) => Math.round(turnMedian(runs.anew, t))),
      ttft_ms_llama_chat_session: Array.from({ length: TURNS }, (_, t) => Math.round(turnMedian(runs.baseline, t))),
      turn6_over_turn1: ours6 / ours1,
      turn6_over_llama_chat_session_turn6: ours6 / theirs6,
      turn6_anew_over_kept: anew6 / ours6,
      rounds: ROUNDS,
      load_average: loadavg()[0],
    }),
  )
} finally {
  await Promise.all(processes.map((p) => p.stop()))
  await publication.close()
  await tracker.close()
  await context.dispose()
  await model.dispose()
  await rm(work, { recursive: true, force: true })
}
