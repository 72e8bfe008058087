// npm run bench:gateway — decode speed of a streamed completion through the OpenAI-compatible
// gateway (HTTP + SSE, receipts settled in the ledger every step) against the SwarmClient driving
// the same route directly, same swarm, same run. Rounds alternate the two (`--rounds N`, default 3);
// one JSON line per run with the load average; the last holds the medians and the ratio.
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import { createAccount, startSwarm } from '../test/programs'
import { BENCH_DIR, benchModel } from './models'

const PROMPT = 'Once upon a time, in a land far away,'
const DECODE = 64
// `--steady`: hosts start past probation (audited at 5 %, not new hosts' 50 %); `--audit-rate R` sets that rate
// (0: no audits, so the two paths differ only by the gateway's own work: HTTP, SSE, holds and per-step settling).
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    steady: { type: 'boolean', default: false },
    'audit-rate': { type: 'string' },
  },
})
const ROUNDS = Number(values.rounds)
const AUDIT_RATE = values['audit-rate'] === undefined ? undefined : Number(values['audit-rate'])
const ADMIN = 'bench-admin'
/** Big enough that compute, not loopback overhead, sets the pace; small enough to pack in seconds. */
const SHAPE = { arch: 'llama', blocks: 8, embd: 1024, heads: 16, kvHeads: 4, ff: 2816, vocab: 32000, seed: 1 } as const

const source = await benchModel('q8_0', SHAPE)
const work = await mkdtemp(join(BENCH_DIR, 'gateway-'))
const swarm = await startSwarm(
  work,
  source,
  [
    [0, 3],
    [3, 6],
    [6, 8],
  ],
  {
    gateway: { adminToken: ADMIN },
    startingGrantMicro: 1_000_000_000,
    checks: {
      ...(values.steady ? { probationProbes: 0 } : {}),
      ...(AUDIT_RATE === undefined ? {} : { auditRate: AUDIT_RATE }),
    },
  },
)
const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
const { apiKey } = await createAccount(swarm.tracker.url, ADMIN)
const modelId = swarm.manifest.modelId

async function direct(): Promise<{ tokens: number; tps: number; route: string }> {
  const run = client.generate({
    modelId,
    prompt: PROMPT,
    maxTokens: DECODE,
    stopAtEog: false,
    sampling: { temperature: 0 },
  })
  let next = await run.next()
  while (!next.done) next = await run.next()
  return {
    tokens: next.value.completionTokens,
    tps: next.value.decodeTokensPerSecond,
    route: next.value.route.map((h) => h.hostId).join('>'),
  }
}

async function gateway(): Promise<{ tokens: number; tps: number }> {
  const res = await fetch(`${swarm.tracker.url}/v1/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: modelId,
      prompt: PROMPT,
      max_tokens: DECODE,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    }),
  })
  if (res.status !== 200) throw new Error(`gateway answered ${res.status}: ${await res.text()}`)
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  let first = 0
  let last = 0
  let tokens = 0
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    buffer += decoder.decode(value, { stream: true })
    let end = buffer.indexOf('\n\n')
    while (end !== -1) {
      const event = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      end = buffer.indexOf('\n\n')
      if (!event.startsWith('data: ') || event === 'data: [DONE]') continue
      const chunk = JSON.parse(event.slice(6)) as { choices: { text: string }[]; usage?: { completion_tokens: number } }
      if (chunk.usage !== undefined) tokens = chunk.usage.completion_tokens
      else if (chunk.choices[0]?.text) {
        const now = performance.now()
        if (first === 0) first = now
        last = now
      }
    }
  }
  // Decode rate as the caller sees it: from the first streamed text to the last.
  return { tokens, tps: tokens > 1 ? (tokens - 1) / ((last - first) / 1000) : 0 }
}

const directTps: number[] = []
const gatewayTps: number[] = []
try {
  await direct() // warm-up: tokenizer load, first connections
  for (let round = 0; round < ROUNDS; round++) {
    const d = await direct()
    directTps.push(d.tps)
    console.log(
      JSON.stringify({
        run: 'swarm-client',
        round,
        tokens: d.tokens,
        decode_tokens_per_s: d.tps,
        route: d.route,
        load_average: loadavg()[0],
      }),
    )
    const g = await gateway()
    gatewayTps.push(g.tps)
    console.log(
      JSON.stringify({
        run: 'gateway',
        round,
        tokens: g.tokens,
        decode_tokens_per_s: g.tps,
        ratio: g.tps / d.tps,
        load_average: loadavg()[0],
      }),
    )
  }
} finally {
  client.close()
  await swarm.close()
  await rm(work, { recursive: true, force: true })
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0
const d = median(directTps)
const g = median(gatewayTps)
console.log(
  JSON.stringify({
    model: `llama ${SHAPE.blocks}x${SHAPE.embd} q8_0`,
    hops: 3,
    decode_tokens: DECODE,
    swarm_client_tokens_per_s: d,
    gateway_tokens_per_s: g,
    gateway_over_swarm_client: g / d,
    rounds: ROUNDS,
    steady: values.steady,
    audit_rate: AUDIT_RATE ?? 'default',
    load_average: loadavg()[0],
  }),
)
