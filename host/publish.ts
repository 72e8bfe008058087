import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Socket } from 'socket.io-client'
import { connectTracker, trackerBase } from '../client/tracker-connection'
import { tokenizerGguf } from '../gguf/tokenizer'
import type { NodeIdentity } from '../identity/keys'
import { ClientToTracker, callRpc, Manifest, NeuronError, type RpcSocket } from '../protocol'
import { ArtifactStore } from './artifacts/artifact-store'
import { createModelTorrent } from './artifacts/model-torrent'

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
    throw new NeuronError('bad_manifest', `${join(dir, 'manifest.json')} is missing or not JSON; pack the model with neuron pack first.`)
  }
  const parsed = Manifest.safeParse(raw)
  if (!parsed.success)
    throw new NeuronError('bad_manifest', `${join(dir, 'manifest.json')}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`)
  return parsed.data
}

/**
 * Publishes a packed model: makes its torrent (announcing to the tracker), checks every artifact
 * against the manifest, registers the model with its tokenizer, and seeds until closed.
 */
export async function publishModel(dir: string, trackerUrl: string, identity: NodeIdentity, dataDir: string): Promise<Publication> {
  const manifest = await readManifest(dir)
  const torrent = await createModelTorrent(dir, manifest, [`${trackerBase(trackerUrl)}/announce`])
  const store = new ArtifactStore({ dataDir })
  const infoHash = await store.seedDirectory(dir, manifest, torrent)
  const head = manifest.artifacts.find((a) => a.role === 'head')
  const tokenizer = await tokenizerGguf(join(dir, (head ?? manifest.artifacts[0])?.file ?? ''))
  const tracker = await connectTracker(trackerUrl, '/clients', identity)
  const published = await callRpc(tracker, ClientToTracker, 'model.publish', { manifest, torrent, tokenizer })
  if (published.infoHash !== infoHash) throw new NeuronError('internal', `the tracker recorded infohash ${published.infoHash}, the seeder has ${infoHash}`)
  return {
    manifest,
    infoHash,
    store,
    tracker,
    close: async () => {
      tracker.close()
      await store.close()
    },
  }
}
