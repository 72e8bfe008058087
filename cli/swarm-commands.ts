import { existsSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { renderChat } from '../client/chat-template'
import { SwarmClient } from '../client/swarm-client'
import { defaultDataDir, Host } from '../host/host'
import { publishModel } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { NeuronError } from '../protocol'
import { Accounts } from '../tracker/ledger/accounts'
import { MICRO } from '../tracker/ledger/pricing'
import { Tracker } from '../tracker/server'
import { SqliteTrackerStore } from '../tracker/store'
import { runBrowserMode, untilSignal } from './app-command'
import { intOption, parseCommandArgs, requireOption } from './args'
import type { Command } from './main'

function layersOption(raw: string | undefined): readonly [number, number] | 'auto' {
  if (raw === undefined || raw === 'auto') return 'auto'
  const m = /^(\d+):(\d+)$/.exec(raw)
  if (m === null || Number(m[1]) >= Number(m[2])) throw new NeuronError('bad_option', `--layers takes a:b with a < b (blocks [a, b)) or auto, not "${raw}".`)
  return [Number(m[1]), Number(m[2])]
}

const defaultThreads = () => Math.max(1, Math.min(2, availableParallelism()))

export const trackerCommand: Command = {
  name: 'tracker',
  summary: 'run a tracker: registry, placement, routing, relay and a BitTorrent tracker on one port',
  usage: `Usage: neuron tracker [--port 7070] [--host 127.0.0.1] [--db tracker.sqlite] [--heartbeat-ms 5000]

Example: neuron tracker --port 7070 --db /tmp/neuron-tracker.sqlite`,
  async run(args) {
    const { values } = parseCommandArgs(args, {
      port: { type: 'string' },
      host: { type: 'string' },
      db: { type: 'string' },
      'heartbeat-ms': { type: 'string' },
    })
    const tracker = await Tracker.start({
      port: intOption('port', values.port) ?? 7070,
      host: values.host ?? '127.0.0.1',
      dbPath: values.db ?? 'tracker.sqlite',
      heartbeatMs: intOption('heartbeat-ms', values['heartbeat-ms'], { min: 50 }) ?? 5000,
      log: (l) => console.error(`[tracker] ${l}`),
    })
    console.log(`tracker listening on ${tracker.url} (announce ${tracker.announceUrl})`)
    await untilSignal()
    await tracker.close()
    return 0
  },
}

export const publishCommand: Command = {
  name: 'publish',
  summary: 'publish a packed model to a tracker and seed its artifacts',
  usage: `Usage: neuron publish <dir with manifest.json> --tracker URL [--data-dir D]

Creates the model's torrent (deterministic infohash), registers the model and its tokenizer with
the tracker, and seeds until stopped (Ctrl-C) so hosts can fetch their artifacts.

Example: neuron publish /tmp/stories --tracker http://127.0.0.1:7070`,
  async run(args) {
    const { values, positionals } = parseCommandArgs(args, { tracker: { type: 'string' }, 'data-dir': { type: 'string' } })
    const [dir] = positionals
    if (dir === undefined) throw new NeuronError('bad_option', 'publish takes the directory neuron pack wrote. See neuron publish --help.')
    const dataDir = values['data-dir'] ?? defaultDataDir()
    const publication = await publishModel(dir, requireOption('tracker', values.tracker), await NodeIdentity.loadOrCreate(dataDir), join(dataDir, 'publisher'))
    console.log(`published ${publication.manifest.modelId} (infohash ${publication.infoHash}); seeding, Ctrl-C to stop`)
    await untilSignal()
    await publication.close()
    return 0
  },
}

export const hostCommand: Command = {
  name: 'host',
  summary: 'serve blocks of a model to the swarm',
  usage: `Usage: neuron host --tracker URL [--model ID] [--layers a:b|auto] [--data-dir D] [--threads N]
                  [--max-sessions N] [--quota BYTES] [--relay]
       neuron host --ui [--tracker URL] [--model ID [--layers a:b|auto]] [--data-dir D] [--port N]

Joins the tracker, takes blocks [a, b) (or the tracker's placement), fetches and verifies only
their artifacts over BitTorrent, loads them and serves sessions. Ctrl-C drains and leaves.

  --relay   accept no connections; clients reach this host through the tracker
  --ui      run the app's backend and serve its UI at http://127.0.0.1:<port> for a browser
            (without --tracker: the saved setting, else a private swarm in this process)

Example: neuron host --tracker http://127.0.0.1:7070 --model stories260k --layers 0:2 --threads 1
         neuron host --ui --tracker http://127.0.0.1:7070 --model stories260k --port 7071`,
  async run(args) {
    const { values } = parseCommandArgs(args, {
      tracker: { type: 'string' },
      model: { type: 'string' },
      layers: { type: 'string' },
      'data-dir': { type: 'string' },
      threads: { type: 'string' },
      'max-sessions': { type: 'string' },
      quota: { type: 'string' },
      relay: { type: 'boolean' },
      ui: { type: 'boolean' },
      port: { type: 'string' },
    })
    if (values.ui) return hostWithUi(values)
    const maxSessions = intOption('max-sessions', values['max-sessions'], { min: 1 })
    const quotaBytes = intOption('quota', values.quota, { min: 1 })
    const host = new Host({
      trackerUrl: requireOption('tracker', values.tracker),
      dataDir: values['data-dir'] ?? defaultDataDir(),
      ...(values.model === undefined ? {} : { modelId: values.model }),
      layers: layersOption(values.layers),
      threads: intOption('threads', values.threads, { min: 1 }) ?? defaultThreads(),
      ...(maxSessions === undefined ? {} : { maxSessions }),
      ...(quotaBytes === undefined ? {} : { quotaBytes }),
      relay: values.relay ?? false,
      log: (l) => console.error(`[host] ${l}`),
    })
    const stop = untilSignal()
    await host.start()
    console.log(
      `host ${host.hostId} ${host.state.status}${host.state.blocks ? ` blocks [${host.state.blocks[0]}, ${host.state.blocks[1]})` : ''} ${host.state.endpoint ?? ''}`.trim(),
    )
    console.error(`[host] stopping on ${await stop}: draining`)
    await host.stop()
    return 0
  },
}

/** `neuron host --ui`: the app's browser mode on a headless host, hosting --model when given. */
async function hostWithUi(values: {
  tracker?: string
  model?: string
  layers?: string
  'data-dir'?: string
  threads?: string
  port?: string
}): Promise<number> {
  const threads = intOption('threads', values.threads, { min: 1 })
  const port = intOption('port', values.port)
  const layers = layersOption(values.layers)
  const modelId = values.model
  if (modelId === undefined && values.layers !== undefined) throw new NeuronError('bad_option', '--layers needs --model.')
  return runBrowserMode({
    dataDir: values['data-dir'] ?? defaultDataDir(),
    ...(values.tracker === undefined ? {} : { trackerUrl: values.tracker }),
    ...(threads === undefined ? {} : { threads }),
    ...(port === undefined ? {} : { port }),
    afterStart: async (backend) => {
      if (modelId === undefined) return
      let blocks = layers
      if (blocks === 'auto') {
        const preview = await backend.handlers['hosting.preview']({ modelId }, undefined)
        const proposal = preview.placement.proposal
        if (proposal === null)
          throw new NeuronError(
            'not_placed',
            `the tracker proposes no range of ${modelId} for this computer: ${preview.placement.refusal?.reason ?? 'no reason given'}`,
          )
        blocks = proposal.blocks
      }
      const ack = await backend.call('hosting.start', { modelId, blocks })
      if (!ack.ok) throw new NeuronError(ack.error.code, ack.error.message)
      console.error(`[app] hosting ${modelId} blocks [${blocks[0]}, ${blocks[1]}): follow it in the UI`)
    },
  })
}

export const chatCommand: Command = {
  name: 'chat',
  summary: 'generate from a swarm model, streaming tokens',
  usage: `Usage: neuron chat --tracker URL --model ID "prompt" [--max-tokens 128] [--temperature 0] [--seed 0] [--chat] [--f32]

Streams the completion to stdout; the route (hosts, blocks, per-hop ms) and tokens/s go to stderr.

  --chat   send the prompt as a user message, rendered with the model's own chat template
  --f32    hidden states travel as f32 between hops (default f16)

Example: neuron chat --tracker http://127.0.0.1:7070 --model stories260k "Once upon a time"`,
  async run(args) {
    const { values, positionals } = parseCommandArgs(args, {
      tracker: { type: 'string' },
      model: { type: 'string' },
      'max-tokens': { type: 'string' },
      temperature: { type: 'string' },
      seed: { type: 'string' },
      'data-dir': { type: 'string' },
      f32: { type: 'boolean' },
      chat: { type: 'boolean' },
    })
    const prompt = positionals.join(' ')
    if (prompt === '') throw new NeuronError('bad_option', 'give a prompt. See neuron chat --help.')
    const temperature = values.temperature === undefined ? 0 : Number(values.temperature)
    if (!Number.isFinite(temperature) || temperature < 0)
      throw new NeuronError('bad_option', `--temperature must be a number ≥ 0, not "${values.temperature}".`)
    const client = await SwarmClient.connect(
      requireOption('tracker', values.tracker),
      await NodeIdentity.loadOrCreate(values['data-dir'] ?? defaultDataDir()),
      (l) => console.error(`[client] ${l}`),
    )
    try {
      const modelId = requireOption('model', values.model)
      const generation = client.generate({
        modelId,
        prompt: values.chat ? renderChat(await client.tokenizer(modelId), [{ role: 'user', content: prompt }]) : prompt,
        maxTokens: intOption('max-tokens', values['max-tokens'], { min: 1 }) ?? 128,
        sampling: { temperature, seed: intOption('seed', values.seed) ?? 0 },
        hiddenDtype: values.f32 ? 'f32' : 'f16',
      })
      let next = await generation.next()
      while (!next.done) {
        process.stdout.write(next.value.text)
        next = await generation.next()
      }
      process.stdout.write('\n')
      const s = next.value
      for (const hop of s.route) console.error(`  hop ${hop.hostId} blocks [${hop.blocks[0]}, ${hop.blocks[1]}) ${hop.medianMs.toFixed(2)} ms/step`)
      for (const f of s.failovers) console.error(`  failover: ${f.hostId} [${f.blocks[0]}, ${f.blocks[1]}) replaced in ${f.recoveryMs.toFixed(0)} ms`)
      console.error(`  ${s.completionTokens} tokens (${s.finishReason}), ${s.decodeTokensPerSecond.toFixed(1)} tokens/s`)
    } finally {
      client.close()
    }
    return 0
  },
}

export const accountCommand: Command = {
  name: 'account',
  summary: 'create a gateway account (API key + starting grant) in a tracker’s database',
  usage: `Usage: neuron account create --db tracker.sqlite [--name NAME] [--grant-micro N]

Creates an account in the tracker's SQLite file (the tracker may be running) and prints its API
key once; only the key's sha256 is stored. 1 credit = 1,000,000 micro-credits; the grant
defaults to NEURON_STARTING_GRANT_MICRO or 10 credits.

Example: neuron account create --db /tmp/neuron.sqlite --name me`,
  async run(args) {
    const { values, positionals } = parseCommandArgs(args, { db: { type: 'string' }, name: { type: 'string' }, 'grant-micro': { type: 'string' } })
    if (positionals[0] !== 'create') throw new NeuronError('bad_option', 'the account command has one action: neuron account create --db tracker.sqlite.')
    const db = requireOption('db', values.db)
    if (!existsSync(db)) throw new NeuronError('bad_option', `${db} does not exist; give the --db file your tracker runs on.`)
    const store = new SqliteTrackerStore(db)
    try {
      const envGrant = Number(process.env.NEURON_STARTING_GRANT_MICRO)
      const accounts = new Accounts(store.ledger, Number.isSafeInteger(envGrant) && envGrant >= 0 ? envGrant : 10 * MICRO)
      const grantMicro = intOption('grant-micro', values['grant-micro'])
      const created = accounts.create({ ...(values.name === undefined ? {} : { name: values.name }), ...(grantMicro === undefined ? {} : { grantMicro }) })
      console.log(
        JSON.stringify({ account_id: created.account.accountId, name: created.account.name, api_key: created.apiKey, grant_micro: created.grantMicro }),
      )
    } finally {
      store.close()
    }
    return 0
  },
}
