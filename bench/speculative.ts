// npm run bench:speculative — speculative decoding through a route of 3 hosts (real processes on loopback) over
// stories260K: the same greedy chat without a draft, with the model drafting for itself (every draft accepted: the
// path's best case) and with a damaged copy of it (same tokenizer, two blocks zeroed: a realistic acceptance).
// Rounds alternate the three runs (`--rounds N`, default 3; `--k K` drafts per step, default 4); each run prints one
// JSON line with the load average; the last line holds the medians, the tokens/s ratios against the plain route and
// the acceptance rates measured. Audits are off on this tracker (steps beside a draft are not audited yet, so the
// plain route runs without them too, for a fair ratio).
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { type GenerateRequest, SwarmClient } from '../client/swarm-client'
import { packModel } from '../gguf/pack'
import { publishModel } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { splitBlocks } from '../protocol'
import { damagedCopy } from '../test/draft-models'
import { drain } from '../test/generations'
import { STORIES_260K } from '../test/models'
import type { NeuronProcess } from '../test/processes'
import { Tracker } from '../tracker/server'
import { BENCH_DIR } from './models'
import { median, startSeededHost } from './seeded-host'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    k: { type: 'string', default: '4' },
    tokens: { type: 'string', default: '128' },
  },
})
const ROUNDS = Number(values.rounds)
const K = Number(values.k)
const DECODE = Number(values.tokens)
const HOPS = 3
const PROMPT = 'Once upon a time'

await mkdir(BENCH_DIR, { recursive: true })
const work = await mkdtemp(join(BENCH_DIR, 'speculative-'))
const packed = join(work, 'packed')
const manifest = await packModel({ source: STORIES_260K, out: packed, blocksPerArtifact: 1 })
const damaged = await damagedCopy(STORIES_260K, join(work, 'damaged.gguf'), [1, 3])
const runs: { label: string; draft?: GenerateRequest['draft'] }[] = [
  { label: 'plain' },
  { label: 'self_draft', draft: { path: STORIES_260K, k: K } },
  { label: 'damaged_draft', draft: { path: damaged, k: K } },
]

const tracker = await Tracker.start({
  dbPath: ':memory:',
  newKeyGrantMicro: 1_000_000_000,
  grantWorkBits: 0,
  grantsPerPrefixPerDay: 1_000_000,
  checks: { probationProbes: 0, auditRate: 0, probationProbeEveryMs: 3_600_000 },
})
const publication = await publishModel(packed, tracker.url, NodeIdentity.generate(), join(work, 'publisher'))
const hosts: NeuronProcess[] = []
let client: SwarmClient | undefined
try {
  for (const [i, [a, b]] of splitBlocks(manifest.nLayer, HOPS).entries()) {
    const host = await startSeededHost({
      trackerUrl: tracker.url,
      manifest,
      packed,
      dataDir: join(work, `host${i}`),
      blocks: [a, b],
      threads: 1,
    })
    hosts.push(host)
    await host.waitFor(/ ready blocks/, 300_000)
  }
  client = await SwarmClient.connect(tracker.url, NodeIdentity.generate())
  const chat = async (draft: GenerateRequest['draft']) => {
    return drain(
      (client as SwarmClient).generate({
        modelId: manifest.modelId,
        prompt: PROMPT,
        maxTokens: DECODE,
        stopAtEog: false,
        ...(draft ? { draft } : {}),
      }),
    )
  }
  for (const r of runs) await chat(r.draft) // warm-up: tokenizer, draft load, first connections
  const tps = new Map(runs.map((r) => [r.label, [] as number[]]))
  const acceptance = new Map(runs.map((r) => [r.label, [] as number[]]))
  let reference: number[] | undefined
  for (let round = 0; round < ROUNDS; round++) {
    for (const r of runs) {
      const { tokens, summary } = await chat(r.draft)
      reference ??= tokens
      const s = summary.speculation
      const rate = s === undefined || s.drafted === 0 ? undefined : s.accepted / s.drafted
      tps.get(r.label)?.push(summary.decodeTokensPerSecond)
      if (rate !== undefined) acceptance.get(r.label)?.push(rate)
      const steps = new Set(summary.receipts.map((x) => x.step)).size
      console.log(
        JSON.stringify({
          round,
          run: r.label,
          tokens: tokens.length,
          same_tokens_as_plain: tokens.every((t, i) => t === reference?.[i]),
          route_steps: steps,
          decode_tokens_per_s: summary.decodeTokensPerSecond,
          ...(s === undefined
            ? {}
            : { verify_steps: s.verifySteps, drafted: s.drafted, accepted: s.accepted, acceptance: rate }),
          hops_median_ms: summary.route.map((h) => h.medianMs),
          load_average: loadavg()[0],
        }),
      )
    }
  }
  const plain = median(tps.get('plain') ?? [])
  const results: Record<string, number> = { plain_tokens_per_s: plain }
  for (const r of runs.slice(1)) {
    const m = median(tps.get(r.label) ?? [])
    results[`${r.label}_tokens_per_s`] = m
    results[`${r.label}_ratio`] = m / plain
    results[`${r.label}_acceptance`] = median(acceptance.get(r.label) ?? [])
  }
  console.log(
    JSON.stringify({
      bench: 'speculative',
      model: 'stories260K',
      hops: HOPS,
      k: K,
      decode_tokens: DECODE,
      rounds: ROUNDS,
      ...results,
      load_average: loadavg()[0],
    }),
  )
} finally {
  await client?.close()
  await Promise.all(hosts.map((h) => h.stop()))
  await publication.close()
  await tracker.close()
  await rm(work, { recursive: true, force: true })
}
