// `neuron host` processes for the benches: a store pre-seeded with hard links to the packed artifacts, so benches
// that measure serving (bench:route, bench:load, bench:host-memory, bench:host-restart) do not wait for BitTorrent.
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { link, mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { artifactsForBlocks, type Manifest } from '../protocol'
import { type NeuronProcess, startNeuron } from '../test/processes'

export interface HostProcess {
  readonly trackerUrl: string
  readonly modelId: string
  readonly dataDir: string
  readonly blocks: readonly [number, number]
  readonly threads: number
  /** More `neuron host` flags. */
  readonly args?: readonly string[]
  readonly env?: NodeJS.ProcessEnv
}

export interface SeededHost extends Omit<HostProcess, 'modelId'> {
  readonly manifest: Manifest
  /** The packed model's directory (neuron pack's --out). */
  readonly packed: string
}

/** Links the range's artifacts from the packed model into `dataDir`'s store; returns their paths there. */
export async function seedDataDir(
  dataDir: string,
  manifest: Manifest,
  packed: string,
  blocks: readonly [number, number],
): Promise<string[]> {
  const modelDir = join(dataDir, 'models', manifest.modelId)
  await mkdir(modelDir, { recursive: true })
  const files: string[] = []
  for (const { file } of artifactsForBlocks(manifest, blocks)) {
    await link(join(packed, file), join(modelDir, file))
    files.push(join(modelDir, file))
  }
  return files
}

/** A `neuron host` process over whatever its data dir holds. */
export function startHostProcess(o: HostProcess): NeuronProcess {
  const [a, b] = o.blocks
  const args = [
    'host',
    '--tracker',
    o.trackerUrl,
    '--model',
    o.modelId,
    '--blocks',
    `${a}:${b}`,
    '--data-dir',
    o.dataDir,
  ]
  return startNeuron([...args, '--threads', String(o.threads), ...(o.args ?? [])], o.env)
}

export async function startSeededHost(o: SeededHost): Promise<NeuronProcess> {
  await seedDataDir(o.dataDir, o.manifest, o.packed, o.blocks)
  return startHostProcess({ ...o, modelId: o.manifest.modelId })
}

/** Drops clean page cache so a run reads its artifacts from disk (needs root); false when this process may not. */
export function dropCaches(): boolean {
  try {
    execFileSync('sync')
    writeFileSync('/proc/sys/vm/drop_caches', '1')
    return true
  } catch {
    return false
  }
}

/** The median, the mean of the middle two for an even count. */
export function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}
