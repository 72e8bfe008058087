import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Socket } from 'socket.io-client'
import { connectTracker, trackerBase } from '../dataplane/tracker-connection'
import { tokenizerGguf } from '../gguf/tokenizer'
import type { NodeIdentity } from '../identity/keys'
import { ClientToTracker, callRpc, encodeProbeSet, Manifest, NeuronError, type RpcSocket } from '../protocol'
import { checkTokenizer, tokenizerSha256 } from '../text/tokenizer'
import { ArtifactStore, type ArtifactStoreOptions } from './artifacts/artifact-store'
import { createModelTorrent } from './artifacts/model-torrent'
import { computeProbeSet, type ProbeSetOptions } from './probes'

export interface Publication {
  readonly manifest: Manifest
  readonly infoHash: string
  /** Seeds the artifacts until closed. */
  readonly store: ArtifactStore
  readonly tracker: Socket & RpcSocket
  close(): Promise<void>
}

/** Reads and checks `<dir>/manifest.json`. */
export async function readManifest(dir: string): Promise<Manifest> {
  let raw: unknown
  try {
    raw = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8'))
  } catch {
    throw new NeuronError(
      'bad_manifest',
      `${join(dir, 'manifest.json')} is missing or not JSON; pack the model with neuron pack first.`,
    )
  }
  const parsed = Manifest.safeParse(raw)
  if (!parsed.success)
    throw new NeuronError(
      'bad_manifest',
      `${join(dir, 'manifest.json')}: ` +
        `${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    )
  return parsed.data
}

/**
 * Publishes a packed model: makes its torrent (announcing to the tracker), checks every artifact
 * against the manifest, registers the model with its tokenizer, and seeds until closed (on the
 * torrent port and address `seeding` names). A published model never changes: publishing it again
 * with the same key and the same pack is accepted (a restart); anything else needs a new model id.
 * Unless `probes` is false, it first computes the model's secret known-answer probes (on `threads`
 * CPU threads, default 1) and hands them to the tracker, which checks hosts with them.
 */
export async function publishModel(
  dir: string,
  trackerUrl: string,
  identity: NodeIdentity,
  dataDir: string,
  seeding: Pick<ArtifactStoreOptions, 'torrentPort' | 'torrentHost'> = {},
  probes: Partial<ProbeSetOptions> | false = {},
): Promise<Publication> {
  const packed = await readManifest(dir)
  const head = packed.artifacts.find((a) => a.role === 'head')
  const tokenizer = await tokenizerGguf(join(dir, (head ?? packed.artifacts[0])?.file ?? ''))
  checkTokenizer(packed, tokenizer, `of ${dir}`, 'its artifacts are not the ones packed; pack the model again.')
  // A pack made before tokenizers were hashed gets the hash here, so the tracker can check it.
  const manifest: Manifest = { ...packed, tokenizerSha256: packed.tokenizerSha256 ?? tokenizerSha256(tokenizer) }
  const probeSet = probes === false ? undefined : await computeProbeSet(manifest, dir, { threads: 1, ...probes })
  const torrent = await createModelTorrent(dir, manifest, [`${trackerBase(trackerUrl)}/announce`])
  const store = new ArtifactStore({ dataDir, ...seeding })
  let tracker: (Socket & RpcSocket) | undefined
  const close = async () => {
    tracker?.close()
    await store.close()
  }
  try {
    // Joined before seeding: a private swarm answers announces only from an address with an admitted connection.
    tracker = await connectTracker(trackerUrl, '/clients', identity)
    const infoHash = await store.seedDirectory(dir, manifest, torrent)
    const published = await callRpc(tracker, ClientToTracker, 'model.publish', {
      manifest,
      torrent,
      tokenizer,
      ...(probeSet === undefined ? {} : { probes: encodeProbeSet(probeSet) }),
    })
    if (published.infoHash !== infoHash)
      throw new NeuronError(
        'internal',
        `the tracker recorded infohash ${published.infoHash}, the seeder has ${infoHash}`,
      )
    return { manifest, infoHash, store, tracker, close }
  } catch (error) {
    // Refused (a taken model id, say): nothing keeps seeding what the tracker does not list.
    await close()
    throw error
  }
}
