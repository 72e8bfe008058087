import parseTorrent from 'parse-torrent'
import { type Manifest, type ModelSummary, NeuronError } from '../protocol'
import type { HostRegistry } from './registry'
import type { StoredModel, TrackerStore } from './store'

interface ParsedTorrent {
  name?: string
  infoHash?: string
  pieceLength?: number
  files?: { name: string; length: number }[]
}

/** The models a swarm serves: their manifests and the one torrent that carries each model's artifacts. */
export class ModelCatalog {
  constructor(
    private readonly store: TrackerStore,
    private readonly registry: HostRegistry,
  ) {}

  /**
   * Registers a model. The torrent must be the model's: named by its id, one file per artifact in
   * manifest order with the manifest's sizes, pieces of the manifest's size, so hosts can trust it.
   */
  async publish(manifest: Manifest, torrent: Uint8Array, tokenizer: Uint8Array, publishedBy: string): Promise<StoredModel> {
    let parsed: ParsedTorrent
    try {
      // parse-torrent 11 is async; its @types describe an older, synchronous version.
      parsed = (await parseTorrent(Buffer.from(torrent))) as ParsedTorrent
    } catch (cause) {
      throw new NeuronError(
        'bad_torrent',
        `the torrent for ${manifest.modelId} cannot be parsed (${cause instanceof Error ? cause.message : cause}); create it with neuron publish.`,
      )
    }
    const files = (parsed.files ?? []).map((f) => ({ name: f.name, length: f.length }))
    const expected = manifest.artifacts.map((a) => ({ name: a.file, length: a.bytes }))
    if (parsed.name !== manifest.modelId || parsed.pieceLength !== manifest.pieceBytes || JSON.stringify(files) !== JSON.stringify(expected)) {
      throw new NeuronError(
        'bad_torrent',
        `the torrent does not match the manifest of ${manifest.modelId}: expected name ${manifest.modelId}, ${manifest.pieceBytes}-byte pieces and files ${expected.map((f) => `${f.name} (${f.length})`).join(', ')}; got name ${parsed.name}, ${parsed.pieceLength}-byte pieces and ${files.map((f) => `${f.name} (${f.length})`).join(', ')}.`,
      )
    }
    const existing = this.store.getModel(manifest.modelId)
    if (existing !== undefined && existing.infoHash !== parsed.infoHash) {
      throw new NeuronError(
        'model_exists',
        `model ${manifest.modelId} is already published with other artifacts (infohash ${existing.infoHash}); publish under a new --model-id.`,
      )
    }
    const model: StoredModel = {
      manifest,
      torrent: Buffer.from(torrent),
      tokenizer: Buffer.from(tokenizer),
      infoHash: parsed.infoHash as string,
      publishedBy,
      publishedAt: Date.now(),
    }
    this.store.putModel(model)
    return model
  }

  get(modelId: string): StoredModel {
    const model = this.store.getModel(modelId)
    if (model === undefined) {
      const known = this.store.listModels().map((m) => m.manifest.modelId)
      throw new NeuronError('unknown_model', `no model ${modelId} in this swarm; known models: ${known.length === 0 ? 'none yet' : known.join(', ')}.`, {
        modelId,
      })
    }
    return model
  }

  summaries(): ModelSummary[] {
    return this.store.listModels().map((m) => ({
      modelId: m.manifest.modelId,
      name: m.manifest.name,
      architecture: m.manifest.architecture,
      nLayer: m.manifest.nLayer,
      bytes: m.manifest.artifacts.reduce((s, a) => s + a.bytes, 0),
      infoHash: m.infoHash,
      coverage: this.registry.coverage(m.manifest.modelId, m.manifest.nLayer),
    }))
  }
}
