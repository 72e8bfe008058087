// npm run bench:route — decode speed through a route of 1, 2 and 3 hosts (real processes on
// loopback) against node-llama-cpp running the whole model in one process, same threads per
// compute, same run. Prints one JSON line per measurement; the last line holds the ratios.
import { existsSync } from 'node:fs'
import { link, mkdir, mkdtemp, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { LlamaCompletion } from 'node-llama-cpp'
import { SwarmClient } from '../client/swarm-client'
import { sharedLlama } from '../client/tokenizer'
import { packModel } from '../gguf/pack'
import { publishModel, readManifest } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { artifactsForBlocks, splitBlocks } from '../protocol'
import { type NeuronProcess, startNeuron } from '../test/processes'
import { Tracker } from '../tracker/server'
import { BENCH_DIR, benchModel } from './models'

// `--threads N` (default 1): on a 2-core machine, hosts of 2 threads each contend (ggml's worker
// threads spin between ops), so 1 thread per compute is the fair comparison there.
const threadsArg = process.argv.indexOf('--threads')
const THREADS = threadsArg > 0 ? Number(process.argv[threadsArg + 1]) : 1
const PROMPT = 'Once upon a time, in a land far away,'
const DECODE = 64

const source = await benchModel('q8_0')
const packed = join(BENCH_DIR, 'packed-llama-1b-q8_0')
if (!existsSync(packed)) await packModel({ source, out: packed, blocksPerArtifact: 1 })
const manifest = await readManifest(packed)

// Baseline: llama.cpp on the whole model in this process.
const llama = await sharedLlama()
const model = await llama.loadModel({ modelPath: source, gpuLayers: 0 })
const context = await model.createContext({ contextSize: 512, threads: THREADS })
const completion = new LlamaCompletion({ contextSequence: context.getSequence() })
let first = 0
let count = 0
const baselineStarted = performance.now()
await completion.generateCompletion(PROMPT, {
  maxTokens: DECODE,
  temperature: 0,
  onToken: (tokens) => {
    count += tokens.length
    if (first === 0) first = performance.now()
  },
})
const baselineTps = (count - 1) / ((performance.now() - first) / 1000)
console.log(
  JSON.stringify({
    run: 'node-llama-cpp',
    threads: THREADS,
    tokens: count,
    decode_tokens_per_s: baselineTps,
    total_s: (performance.now() - baselineStarted) / 1000,
  }),
)
await context.dispose()
await model.dispose()

const work = await mkdtemp(join(BENCH_DIR, 'route-'))
const tracker = await Tracker.start({ dbPath: ':memory:' })
const publication = await publishModel(packed, tracker.url, NodeIdentity.generate(), join(work, 'publisher'))
const results: Record<string, number> = {}
try {
  for (const hops of [1, 2, 3]) {
    const processes: NeuronProcess[] = []
    try {
      for (const [i, [a, b]] of splitBlocks(manifest.nLayer, hops).entries()) {
        const dataDir = join(work, `hops${hops}-host${i}`)
        // Pre-seed the host's store with hard links: this bench measures serving, not downloading.
        const modelDir = join(dataDir, 'models', manifest.modelId)
        await mkdir(modelDir, { recursive: true })
        for (const { file } of artifactsForBlocks(manifest, [a, b])) await link(join(packed, file), join(modelDir, file))
        const host = startNeuron([
          'host',
          '--tracker',
          tracker.url,
          '--model',
          manifest.modelId,
          '--blocks',
          `${a}:${b}`,
          '--data-dir',
          dataDir,
          '--threads',
          String(THREADS),
        ])
        processes.push(host)
        await host.waitFor(/ ready blocks/, 300_000)
      }
      const client = await SwarmClient.connect(tracker.url, NodeIdentity.generate())
      try {
        const run = client.generate({ modelId: manifest.modelId, prompt: PROMPT, maxTokens: DECODE, stopAtEog: false })
        let next = await run.next()
        while (!next.done) next = await run.next()
        const s = next.value
        const tps = s.decodeTokensPerSecond
        const overheadMsPerHop = (1000 / tps - 1000 / baselineTps) / hops
        results[`decode_ratio_${hops}_hops`] = tps / baselineTps
        console.log(
          JSON.stringify({
            run: `route of ${hops}`,
            hops: s.route.map((h) => ({ blocks: h.blocks, median_ms: h.medianMs })),
            decode_tokens_per_s: tps,
            ratio: tps / baselineTps,
            overhead_ms_per_hop: overheadMsPerHop,
          }),
        )
        results[`overhead_ms_per_hop_${hops}_hops`] = overheadMsPerHop
      } finally {
        client.close()
      }
    } finally {
      await Promise.all(processes.map((p) => p.stop()))
    }
  }
  console.log(JSON.stringify({ bench: 'route', model: source, threads: THREADS, decode_tokens: DECODE, baseline_tokens_per_s: baselineTps, ...results }))
} finally {
  await publication.close()
  await tracker.close()
  await rm(work, { recursive: true, force: true })
}
