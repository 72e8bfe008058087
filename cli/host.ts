import { defaultDataDir, Host } from '../host/host'
import { MAX_BATCHED_STEP_ROWS } from '../host/serving/step-batcher'
import { type BlockRange, MAX_RELAY_CIRCUITS, NeuronError } from '../protocol'
import { untilSignal } from '../tracker/main'
import {
  blocksOption,
  defaultThreads,
  intOption,
  parseCommandArgs,
  renamedOption,
  requireOption,
  tlsOptions,
} from './args'
import { runBrowserMode } from './browser-mode'
import type { Command } from './command'

export const hostCommand: Command = {
  name: 'host',
  usage: `Usage: neuron host --tracker URL [--model ID] [--blocks a:b|auto] [--data-dir D] [--threads N]
                  [--max-sessions N] [--quota BYTES] [--listen ADDR:PORT] [--relay] [--torrent-port N]
                  [--prefill-chunk N] [--relay-for-others [--relay-circuits N] [--relay-mbit M]]
                  [--tls-key key.pem --tls-cert cert.pem]
       neuron host --ui [--tracker URL] [--model ID [--blocks a:b|auto]] [--data-dir D] [--port N]

Joins the tracker, takes blocks [a, b) (or the tracker's placement), fetches and verifies only
their artifacts over BitTorrent, loads them and serves sessions. Ctrl-C drains and leaves.

  --tracker URL[,URL…]   a tracker run as several instances: the host joins the next that answers
            when the one it is on goes away
  --listen ADDR:PORT   where the data plane listens (default every interface on a free port, or
            127.0.0.1 when the tracker is on this computer): a port you forward on your router
  --relay   accept no connections; clients reach this host through a relay (a volunteer's, else the tracker's)
  --relay-for-others   carry frames for hosts nobody can reach (used only where the tracker proves this
            host's public endpoint), at most --relay-circuits circuits (default 16) and --relay-mbit
            Mbit/s (default 20); paid per frame carried
  --torrent-port N   the BitTorrent TCP port artifacts are fetched and seeded on (default: a free one)
  --prefill-chunk N   a long prompt runs N tokens at a time beside the other sessions' decoding
            (default 64, at most 64): their next token waits one chunk, not the whole prompt; 0 runs prompts whole
  --tls-key, --tls-cert   serve the data plane over wss:// with this PEM key and certificate
            (an https tracker with a self-signed certificate: start with NODE_EXTRA_CA_CERTS=ca.pem)
  --ui      run the app's backend and serve its UI at http://127.0.0.1:<port> for a browser
            (without --tracker: the saved setting, else a private swarm in this process)

Example: neuron host --tracker http://127.0.0.1:7070 --model stories260k --blocks 0:2 --threads 1
         neuron host --ui --tracker http://127.0.0.1:7070 --model stories260k --port 7071`,
  async run(args) {
    const { values } = parseCommandArgs(args, {
      tracker: { type: 'string' },
      model: { type: 'string' },
      blocks: { type: 'string' },
      layers: { type: 'string' },
      'data-dir': { type: 'string' },
      threads: { type: 'string' },
      'max-sessions': { type: 'string' },
      quota: { type: 'string' },
      relay: { type: 'boolean' },
      listen: { type: 'string' },
      'relay-for-others': { type: 'boolean' },
      'relay-circuits': { type: 'string' },
      'relay-mbit': { type: 'string' },
      'torrent-port': { type: 'string' },
      'prefill-chunk': { type: 'string' },
      'tls-key': { type: 'string' },
      'tls-cert': { type: 'string' },
      ui: { type: 'boolean' },
      port: { type: 'string' },
    })
    const blocks = blocksOption(renamedOption(values, 'blocks', 'layers'))
    if (values.ui) return hostWithUi(values, blocks)
    const maxSessions = intOption('max-sessions', values['max-sessions'], { min: 1 })
    const quotaBytes = intOption('quota', values.quota, { min: 1 })
    const torrentPort = intOption('torrent-port', values['torrent-port'], { min: 1, max: 65535 })
    const prefillChunkTokens = intOption('prefill-chunk', values['prefill-chunk'], {
      min: 0,
      max: MAX_BATCHED_STEP_ROWS,
    })
    const tls = tlsOptions(values)
    const listen = listenOption(values.listen)
    const relayCircuits =
      intOption('relay-circuits', values['relay-circuits'], { min: 1, max: MAX_RELAY_CIRCUITS }) ?? 16
    const relayMbit = intOption('relay-mbit', values['relay-mbit'], { min: 1, max: 100_000 }) ?? 20
    const host = new Host({
      trackerUrl: requireOption('tracker', values.tracker),
      dataDir: values['data-dir'] ?? defaultDataDir(),
      ...(values.model === undefined ? {} : { modelId: values.model }),
      blocks,
      threads: intOption('threads', values.threads, { min: 1 }) ?? defaultThreads(),
      ...(maxSessions === undefined ? {} : { maxSessions }),
      ...(quotaBytes === undefined ? {} : { quotaBytes }),
      ...(torrentPort === undefined ? {} : { torrentPort }),
      ...(prefillChunkTokens === undefined ? {} : { prefillChunkTokens }),
      ...(tls === undefined ? {} : { tls }),
      ...(listen === undefined ? {} : { listenHost: listen.host, listenPort: listen.port }),
      relay: values.relay ?? false,
      ...(values['relay-for-others'] === true ? { relayForOthers: { circuits: relayCircuits, mbit: relayMbit } } : {}),
      log: (l) => console.error(`[host] ${l}`),
    })
    const stop = untilSignal()
    await host.start()
    const { status, blocks: served, endpoint } = host.state
    const range = served ? ` blocks [${served[0]}, ${served[1]})` : ''
    console.log(`host ${host.hostId} ${status}${range} ${endpoint ?? ''}`.trim())
    console.error(`[host] stopping on ${await stop}: draining`)
    await host.stop()
    return 0
  },
}

/** `--listen ADDR:PORT` (or `[v6]:PORT`, or a bare PORT on every interface). */
function listenOption(raw: string | undefined): { host: string; port: number } | undefined {
  if (raw === undefined) return undefined
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:]+)):(\d+)$/.exec(raw) ?? /^()()(\d+)$/.exec(raw)
  const port = Number(m?.[3])
  if (m === null || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new NeuronError('bad_option', `--listen takes ADDR:PORT (like 0.0.0.0:7100) or a port, not ${raw}.`)
  return { host: m[1] || m[2] || '0.0.0.0', port }
}

/** `neuron host --ui`: the app's browser mode on a headless host, hosting --model when given. */
async function hostWithUi(
  values: {
    tracker?: string
    model?: string
    blocks?: string
    layers?: string
    'data-dir'?: string
    threads?: string
    port?: string
  },
  range: BlockRange | 'auto',
): Promise<number> {
  const threads = intOption('threads', values.threads, { min: 1 })
  const port = intOption('port', values.port)
  const modelId = values.model
  if (modelId === undefined && range !== 'auto') throw new NeuronError('bad_option', '--blocks needs --model.')
  return runBrowserMode({
    dataDir: values['data-dir'] ?? defaultDataDir(),
    ...(values.tracker === undefined ? {} : { trackerUrl: values.tracker }),
    ...(threads === undefined ? {} : { threads }),
    ...(port === undefined ? {} : { port }),
    afterStart: async (backend) => {
      if (modelId === undefined) return
      let blocks = range
      if (blocks === 'auto') {
        const preview = await backend.handlers['hosting.preview']({ modelId }, undefined)
        const proposal = preview.placement.proposal
        if (proposal === null)
          throw new NeuronError(
            'not_placed',
            `the tracker proposes no range of ${modelId} for this computer: ` +
              `${preview.placement.refusal?.reason ?? 'no reason given'}`,
          )
        blocks = proposal.blocks
      }
      const ack = await backend.call('hosting.start', { modelId, blocks })
      if (!ack.ok) throw new NeuronError(ack.error.code, ack.error.message)
      console.error(`[app] hosting ${modelId} blocks [${blocks[0]}, ${blocks[1]}): follow it in the UI`)
    },
  })
}
