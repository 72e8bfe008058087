import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SwarmClient } from '../client/swarm-client'
import { DEFAULT_MODEL } from '../electron/backend/default-model'
import { formatBytes } from '../gguf/inspect'
import { packModel } from '../gguf/pack'
import { Host } from '../host/host'
import { type Publication, publishModel } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { NeuronError, splitBlocks } from '../protocol'
import { Tracker } from '../tracker/server'
import { intOption, parseCommandArgs } from './args'
import type { Command } from './command'

export const demoCommand: Command = {
  name: 'demo',
  usage: `Usage: neuron demo [--model <file.gguf>] [--prompt TEXT] [--max-tokens N] [--hosts N]

Starts a tracker, packs and publishes the model (default: ${DEFAULT_MODEL}),
starts hosts that each fetch only their artifacts from the swarm over BitTorrent, and streams a
greedy completion through the route, printing the route and tokens/s. Everything runs on
127.0.0.1 in a temporary directory that is removed at the end.

Example: neuron demo --prompt "Once upon a time" --max-tokens 64`,
  async run(args) {
    const { values } = parseCommandArgs(args, {
      model: { type: 'string' },
      prompt: { type: 'string' },
      'max-tokens': { type: 'string' },
      hosts: { type: 'string' },
    })
    const model = values.model ?? DEFAULT_MODEL
    const nHosts = intOption('hosts', values.hosts, { min: 1 }) ?? 3
    const work = await mkdtemp(join(tmpdir(), 'neuron-demo-'))
    const hosts: Host[] = []
    let tracker: Tracker | undefined
    let publication: Publication | undefined
    let client: SwarmClient | undefined
    try {
      // The demo's client is a new key: it gets a grant, as on a public tracker.
      tracker = await Tracker.start({ dbPath: join(work, 'tracker.sqlite'), newKeyGrantMicro: 10_000_000 })
      console.log(`tracker      ${tracker.url}`)
      const manifest = await packModel({ source: model, out: join(work, 'artifacts'), blocksPerArtifact: 1 })
      if (manifest.nLayer < nHosts)
        throw new NeuronError(
          'bad_option',
          `${model} has ${manifest.nLayer} blocks; use --hosts ${manifest.nLayer} or fewer.`,
        )
      publication = await publishModel(
        join(work, 'artifacts'),
        tracker.url,
        NodeIdentity.generate(),
        join(work, 'publisher'),
      )
      console.log(
        `published    ${manifest.modelId}: ${manifest.nLayer} blocks in ${manifest.artifacts.length} artifacts, ` +
          `infohash ${publication.infoHash}`,
      )
      for (const [i, blocks] of splitBlocks(manifest.nLayer, nHosts).entries()) {
        const dataDir = join(work, `host-${i + 1}`)
        const host = new Host({
          trackerUrl: tracker.url,
          dataDir,
          modelId: manifest.modelId,
          blocks: blocks,
          threads: 1,
        })
        hosts.push(host)
        await host.start()
        const files = await readdir(join(dataDir, 'models', manifest.modelId))
        const bytes = manifest.artifacts.filter((a) => files.includes(a.file)).reduce((s, a) => s + a.bytes, 0)
        console.log(
          `host ${i + 1}       blocks [${blocks[0]}, ${blocks[1]}) fetched ${files.length} of ` +
            `${manifest.artifacts.length} artifacts (${formatBytes(bytes)}): ${files.sort().join(', ')}`,
        )
      }
      client = await SwarmClient.connect(tracker.url, NodeIdentity.generate())
      const prompt = values.prompt ?? 'Once upon a time'
      process.stdout.write(`\n${prompt}`)
      const generation = client.generate({
        modelId: manifest.modelId,
        prompt,
        maxTokens: intOption('max-tokens', values['max-tokens'], { min: 1 }) ?? 64,
      })
      let next = await generation.next()
      while (!next.done) {
        process.stdout.write(next.value.text)
        next = await generation.next()
      }
      const s = next.value
      console.log('\n\nroute')
      for (const hop of s.route)
        console.log(
          `  ${hop.hostId}  blocks [${hop.blocks[0]}, ${hop.blocks[1]})  ${hop.medianMs.toFixed(2)} ms per step`,
        )
      console.log(
        `${s.completionTokens} tokens at ${s.decodeTokensPerSecond.toFixed(1)} tokens/s through ${s.route.length} hops`,
      )
      return 0
    } finally {
      await client?.close()
      for (const h of hosts) await h.stop(1000)
      await publication?.close()
      await tracker?.close()
      await rm(work, { recursive: true, force: true })
    }
  },
}
