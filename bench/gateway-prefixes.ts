// npm run bench:gateway-prefixes: the gateway's requests sharing a long system prompt (issue 35): 20 requests from 20
// API keys through the OpenAI-compatible gateway (prefixes shared across keys, GatewayOptions.sharedPrefixes), each a
// ~1 500-token system prompt and its own question, on a route of 3 hosts; against the same 20 prompts through a
// client that reuses nothing (every prompt prefilled whole), alternating, `--rounds N` (default 3). The hosts count the
// prompt positions their blocks ran (Host.computedPositions); every answer is checked against the baseline's
// (greedy). Each run prints a line with the load average; the last line holds the medians and the ratios.
// `--model 1b`: TinyLlama's shape (1.1B, q8_0) instead of the ~100M llama (a 1 500-token prefill there takes ~20 s a
// request).

import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { SwarmClient } from '../client/swarm-client'
import { packModel } from '../gguf/pack'
import { Host } from '../host/host'
import { publishModel, readManifest } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { type ChatMessage, splitBlocks } from '../protocol'
import { createAccount } from '../test/programs'
import { renderChat } from '../text/chat-template'
import { BENCH_DIR, benchModel, LLAMA_1B, LLAMA_100M } from './models'
import { median, seedDataDir } from './seeded-host'
import { startTrackerProcess } from './tracker-process'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    requests: { type: 'string', default: '20' },
    threads: { type: 'string', default: '1' },
    model: { type: 'string', default: '100m' },
  },
})
const ROUNDS = Number(values.rounds)
const REQUESTS = Number(values.requests)
const THREADS = Number(values.threads)
const ANSWER_TOKENS = 8
const HOPS = 3
const ADMIN = 'bench-admin-token'

const shape = values.model === '1b' ? LLAMA_1B : LLAMA_100M
const source = await benchModel('q8_0', shape)
const packed = join(BENCH_DIR, values.model === '1b' ? 'packed-llama-1b-q8_0' : 'packed-llama-100m-q8_0')
if (!existsSync(packed)) await packModel({ source, out: packed, blocksPerArtifact: 1 })
const manifest = await readManifest(packed)

/** The shared system prompt: plain sentences, about 1 500 tokens of the bench models' vocabulary. */
function systemPrompt(): string {
  const words = ['the', 'river', 'carried', 'small', 'boats', 'past', 'old', 'mills', 'while', 'children', 'counted']
  const lines: string[] = []
  for (let i = 0; i < 40; i++) {
    const w = (j: number) => words[(i * 3 + j) % words.length]
    lines.push(`Rule ${i + 1}: ${w(0)} ${w(1)} ${w(2)} ${w(3)} ${w(4)} ${w(5)} ${w(6)} ${w(7)}.`)
  }
  return lines.join(' ')
}
const SYSTEM = systemPrompt()
const question = (i: number) => `Question ${i + 1}: which boat passed the mill number ${i * 7 + 3}?`

const work = await mkdtemp(join(BENCH_DIR, 'gateway-prefixes-'))
const tracker = await startTrackerProcess({
  dbPath: ':memory:',
  newKeyGrantMicro: 1_000_000_000,
  grantWorkBits: 0,
  grantsPerPrefixPerDay: 1_000_000,
  // no audits or probes after the first: the hosts' counts are the requests' own work
  checks: { probationProbes: 1, probeEveryMs: 3_600_000, auditRate: 0, probationAuditRate: 0 },
  gateway: { adminToken: ADMIN, sharedPrefixes: true, requestsPerMinute: 1_000 },
})
const publication = await publishModel(packed, tracker.url, NodeIdentity.generate(), join(work, 'publisher'))
const hosts: Host[] = []
type Run = {
  prompts: number
  computed: number
  ms: number[]
  answers: string[]
  promptTokens: number
  /** The baseline's: each answer token's text and how far the runner-up was below it, nats. */
  margins?: { text: string; margin: number }[][]
}
const runs = { baseline: [] as Run[], gateway: [] as Run[] }
try {
  for (const [i, blocks] of splitBlocks(manifest.nLayer, HOPS).entries()) {
    const dataDir = join(work, `host${i}`)
    await seedDataDir(dataDir, manifest, packed, blocks)
    const host = new Host({ trackerUrl: tracker.url, dataDir, modelId: manifest.modelId, blocks, threads: THREADS })
    hosts.push(host)
    await host.start()
  }
  const keys = await Promise.all(
    Array.from({ length: REQUESTS }, (_, i) => createAccount(tracker.url, ADMIN, { name: `caller ${i}` })),
  )
  const plain = await SwarmClient.connect(tracker.url, NodeIdentity.generate())
  const tokenizer = await plain.tokenizer(manifest.modelId)
  const messages = (i: number): ChatMessage[] => [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: question(i) },
  ]
  const counted = () =>
    hosts.reduce(
      (n, h) => ({ prompts: n.prompts + h.computedPositions.prompts, all: n.all + h.computedPositions.all }),
      { prompts: 0, all: 0 },
    )

  /** The 20 prompts through a client that reuses nothing: each prefilled whole on every hop. */
  async function baseline(): Promise<Run> {
    const before = counted()
    const run: Run = { prompts: 0, computed: 0, ms: [], answers: [], promptTokens: 0, margins: [] }
    for (let i = 0; i < REQUESTS; i++) {
      const prompt = renderChat(tokenizer, messages(i))
      const margins: { text: string; margin: number }[] = []
      const started = performance.now()
      let text = ''
      const tokens = plain.generate({
        modelId: manifest.modelId,
        prompt,
        maxTokens: ANSWER_TOKENS,
        sampling: { temperature: 0, topLogprobs: 2 },
      })
      for (let next = await tokens.next(); !next.done; next = await tokens.next()) {
        text += next.value.text
        const [a, b] = next.value.top ?? []
        margins.push({ text: next.value.text, margin: a && b ? a.logprob - b.logprob : Number.POSITIVE_INFINITY })
      }
      run.margins?.push(margins)
      run.ms.push(performance.now() - started)
      run.answers.push(text)
      run.promptTokens += prompt.length
    }
    const after = counted()
    return { ...run, prompts: after.prompts - before.prompts, computed: after.all - before.all }
  }

  /** The 20 requests through the gateway, one per key: the first prefills the system prompt, the rest start from it. */
  async function gateway(): Promise<Run> {
    const before = counted()
    const run: Run = { prompts: 0, computed: 0, ms: [], answers: [], promptTokens: 0 }
    for (let i = 0; i < REQUESTS; i++) {
      const started = performance.now()
      const res = await fetch(`${tracker.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys[i]?.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: manifest.modelId,
          messages: messages(i),
          max_tokens: ANSWER_TOKENS,
          temperature: 0,
        }),
      })
      const body = (await res.json()) as {
        choices?: { message: { content: string } }[]
        usage?: { prompt_tokens: number }
        error?: unknown
      }
      if (res.status !== 200) throw new Error(`request ${i + 1}: ${res.status} ${JSON.stringify(body.error)}`)
      run.ms.push(performance.now() - started)
      run.answers.push(body.choices?.[0]?.message.content ?? '')
      run.promptTokens += body.usage?.prompt_tokens ?? 0
    }
    const after = counted()
    return { ...run, prompts: after.prompts - before.prompts, computed: after.all - before.all }
  }

  let mismatched = 0
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run] of [
      ['no reuse', baseline],
      ['gateway, prefixes shared', gateway],
    ] as const) {
      const r = await run()
      const list = name === 'no reuse' ? runs.baseline : runs.gateway
      list.push(r)
      const reference = runs.baseline.at(-1)
      const differing = r.answers.flatMap((a, i) =>
        reference === undefined || a === reference.answers[i]
          ? []
          : [{ request: i + 1, ours: a, no_reuse: reference.answers[i], ...divergence(a, reference.margins?.[i]) }],
      )
      const differ = differing.length
      if (name !== 'no reuse') mismatched += differ
      console.log(
        JSON.stringify({
          round,
          run: name,
          prompt_tokens: r.promptTokens,
          prompt_positions_run_by_hosts: r.prompts,
          positions_run_by_hosts: r.computed,
          median_request_ms: Math.round(median(r.ms)),
          answers_differing_from_no_reuse: differ,
          ...(differ > 0 ? { differing } : {}),
          load_average: loadavg()[0],
        }),
      )
    }
  }
  await plain.close()
  const prompts = (list: Run[]) => median(list.map((r) => r.prompts))
  const ms = (list: Run[]) => median(list.map((r) => median(r.ms)))
  console.log(
    JSON.stringify({
      bench: 'gateway-prefixes',
      model: source,
      threads: THREADS,
      hops: HOPS,
      requests: REQUESTS,
      prompt_tokens_per_request: Math.round((runs.baseline[0]?.promptTokens ?? 0) / REQUESTS),
      prompt_positions_run_no_reuse: prompts(runs.baseline),
      prompt_positions_run_gateway: prompts(runs.gateway),
      prompt_positions_saved: 1 - prompts(runs.gateway) / prompts(runs.baseline),
      median_request_ms_no_reuse: Math.round(ms(runs.baseline)),
      median_request_ms_gateway: Math.round(ms(runs.gateway)),
      request_ms_no_reuse_over_gateway: ms(runs.baseline) / ms(runs.gateway),
      answers_differing: mismatched,
      rounds: ROUNDS,
      load_average: loadavg()[0],
    }),
  )
} finally {
  await Promise.all(hosts.map((h) => h.stop()))
  await publication.close()
  await tracker.close()
  await rm(work, { recursive: true, force: true })
}

/**
 * Where an answer parts from the baseline's (greedy, the same prompt): the baseline's token there and how far its
 * runner-up was below it. A near tie (a margin within the noise between batch shapes and f16 seams) parts honestly.
 */
function divergence(ours: string, baseline: { text: string; margin: number }[] | undefined) {
  let text = ''
  for (const [token, { text: piece, margin }] of (baseline ?? []).entries()) {
    if (!ours.startsWith(text + piece)) return { parts_at_token: token + 1, baseline_margin_nats: margin }
    text += piece
  }
  return {}
}
