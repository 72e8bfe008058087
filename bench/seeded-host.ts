// A `neuron host` process whose store is pre-seeded with hard links to the packed artifacts: benches
// that measure serving (bench:route, bench:load) do not wait for BitTorrent.
import { link, mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { artifactsForBlocks, type Manifest } from '../protocol'
import { type NeuronProcess, startNeuron } from '../test/processes'

export interface SeededHost {
  readonly trackerUrl: string
  readonly manifest: Manifest
  /** The packed model's directory (neuron pack's --out). */
  readonly packed: string
  readonly dataDir: string
  readonly blocks: readonly [number, number]
  readonly threads: number
  /** More `neuron host` flags. */
  readonly args?: readonly string[]
}

export async function startSeededHost(o: SeededHost): Promise<NeuronProcess> {
  const modelDir = join(o.dataDir, 'models', o.manifest.modelId)
  await mkdir(modelDir, { recursive: true })
  for (const { file } of artifactsForBlocks(o.manifest, o.blocks)) await link(join(o.packed, file), join(modelDir, file))
  const [a, b] = o.blocks
  return startNeuron([
    'host',
    '--tracker',
    o.trackerUrl,
    '--model',
    o.manifest.modelId,
    '--blocks',
    `${a}:${b}`,
    '--data-dir',
    o.dataDir,
    '--threads',
    String(o.threads),
    ...(o.args ?? []),
  ])
}
