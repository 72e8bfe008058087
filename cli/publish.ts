import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { defaultDataDir } from '../host/host'
import { publishModel } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { NeuronError } from '../protocol'
import { untilSignal } from '../tracker/main'
import { intOption, parseCommandArgs, requireOption } from './args'
import type { Command } from './command'

export const publishCommand: Command = {
  name: 'publish',
  usage: `Usage: neuron publish <dir with manifest.json> --tracker URL [--data-dir D] [--torrent-port N] [--threads N]

Runs the model once, one block at a time, on secret random prompts: the known-answer probes the
tracker checks hosts with (it keeps them to itself). Then creates the model's torrent (deterministic
infohash), registers the model, its tokenizer and the probes with the tracker, and seeds until
stopped (Ctrl-C) so hosts can fetch their artifacts.

A published model never changes. Publishing it again is accepted only from the same key (this
data dir's) with the same pack, as after a restart; a new version needs a new id: neuron pack
--model-id. Any BitTorrent client can fetch the artifacts from <tracker>/models/<id>.torrent.

  --torrent-port N   the BitTorrent TCP port to seed on (default: a free one)
  --threads N        CPU threads computing the probes (default 1, at most this machine's cores)

Example: neuron publish /tmp/stories --tracker http://127.0.0.1:7070`,
  async run(args) {
    const { values, positionals } = parseCommandArgs(args, {
      tracker: { type: 'string' },
      'data-dir': { type: 'string' },
      'torrent-port': { type: 'string' },
      threads: { type: 'string' },
    })
    const [dir] = positionals
    if (dir === undefined)
      throw new NeuronError('bad_option', 'publish takes the directory neuron pack wrote. See neuron publish --help.')
    const dataDir = values['data-dir'] ?? defaultDataDir()
    const torrentPort = intOption('torrent-port', values['torrent-port'], { min: 1, max: 65535 })
    const threads = intOption('threads', values.threads, { min: 1, max: availableParallelism() }) ?? 1
    const identity = await NodeIdentity.loadOrCreate(dataDir)
    const seeding = torrentPort === undefined ? {} : { torrentPort }
    const publication = await publishModel(
      dir,
      requireOption('tracker', values.tracker),
      identity,
      join(dataDir, 'publisher'),
      seeding,
      { threads },
    )
    console.log(`published ${publication.manifest.modelId} (infohash ${publication.infoHash}); seeding, Ctrl-C to stop`)
    await untilSignal()
    await publication.close()
    return 0
  },
}
