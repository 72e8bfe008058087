import { EventEmitter } from 'node:events'
import parseTorrent from 'parse-torrent'
import {
  decodeProbeSet,
  type Manifest,
  type ModelSummary,
  NeuronError,
  type ProbeSet,
  probeBoundary,
  seamAt,
  seamSideValues,
} from '../../protocol'
import { checkTokenizer, tokenizerSha256 } from '../../text/tokenizer'
import type { StoredModel, TrackerStore } from '../db/store'
import type { HostRegistry } from '../hosts/registry'

interface ParsedTorrent {
  name?: string
  infoHash?: string
  pieceLength?: number
  files?: { name: string; length: number }[]
}

/** Who publishes: the authenticated peer's node id and public key. */
export interface Publisher {
  readonly nodeId: string
  readonly publicKey: string
}

export interface CatalogEvents {
  /** A publish succeeded (a first one, or a publisher's identical again): the other instances read the catalog. */
  published: [model: StoredModel, publisher: Publisher]
}

/**
 * The models a swarm serves: their manifests and the one torrent that carries each model's artifacts.
 * A published model never changes: its id names one manifest, one torrent and one tokenizer for
 * good (a new version is a new id). Only the key that published a model may publish it again, and
 * only identically: a publisher restarting does that.
 */
export class ModelCatalog extends EventEmitter<CatalogEvents> {
  /**
   * Published models, read from the store when the tracker starts (`load`) and kept as published: they
   * never change, and routes, placements and host states read them on every request.
   */
  private readonly models = new Map<string, StoredModel>()

  constructor(
    private readonly store: TrackerStore,
    private readonly registry: HostRegistry,
  ) {
    super()
  }

  /** The publishers' probe sets, read with the models: the checks ask for them on every routing decision. */
  private readonly probeSets = new Map<string, ProbeSet>()

  /** Reads every published model and its probes from the store (call once before serving). */
  async load(): Promise<void> {
    for (const model of await this.store.listModels()) {
      const id = model.manifest.modelId
      this.models.set(id, model)
      const probes = await this.store.getProbes(id)
      if (probes !== undefined) this.probeSets.set(id, probes)
    }
  }

  /** Keeps the first probe set a model gets, here and in the store. */
  private async keepProbes(probes: ProbeSet): Promise<void> {
    if (await this.store.putProbes(probes)) this.probeSets.set(probes.modelId, probes)
    else if (!this.probeSets.has(probes.modelId)) {
      const stored = await this.store.getProbes(probes.modelId)
      if (stored !== undefined) this.probeSets.set(probes.modelId, stored)
    }
  }

  /**
   * Registers a model. The torrent must be the model's: named by its id, one file per artifact in
   * manifest order with the manifest's sizes, pieces of the manifest's size, so hosts can trust it;
   * the tokenizer must be the one the manifest's `tokenizerSha256` names. `probes`, the publisher's
   * secret known-answer probes (encoded as they travel, or decoded), must be of this model; the first
   * set a model gets is kept for good.
   */
  async publish(
    manifest: Manifest,
    torrent: Uint8Array,
    tokenizer: Uint8Array,
    publisher: Publisher,
    sent?: ProbeSet | Uint8Array,
  ): Promise<StoredModel> {
    const probes = sent instanceof Uint8Array ? decodeProbeSet(sent) : sent
    let parsed: ParsedTorrent
    try {
      // parse-torrent 11 is async; its @types describe an older, synchronous version.
      parsed = (await parseTorrent(Buffer.from(torrent))) as ParsedTorrent
    } catch (cause) {
      throw new NeuronError(
        'bad_torrent',
        `the torrent for ${manifest.modelId} cannot be parsed (${cause instanceof Error ? cause.message : cause}); ` +
          `create it with neuron publish.`,
      )
    }
    const files = (parsed.files ?? []).map((f) => ({ name: f.name, length: f.length }))
    const expected = manifest.artifacts.map((a) => ({ name: a.file, length: a.bytes }))
    if (
      parsed.name !== manifest.modelId ||
      parsed.pieceLength !== manifest.pieceBytes ||
      JSON.stringify(files) !== JSON.stringify(expected)
    ) {
      throw new NeuronError(
        'bad_torrent',
        `the torrent does not match the manifest of ${manifest.modelId}: expected name ${manifest.modelId}, ` +
          `${manifest.pieceBytes}-byte pieces and files ` +
          `${expected.map((f) => `${f.name} (${f.length})`).join(', ')}; got name ${parsed.name}, ` +
          `${parsed.pieceLength}-byte pieces and ${files.map((f) => `${f.name} (${f.length})`).join(', ')}.`,
      )
    }
    const advice = 'publish with neuron publish, which sends the tokenizer of the packed artifacts.'
    checkTokenizer(manifest, tokenizer, 'sent', advice)
    if (probes !== undefined) checkProbes(manifest, probes)
    const infoHash = parsed.infoHash as string
    // Another publish of this id landing between the check and the insert is caught by putModel (the id is unique).
    const existing = this.models.get(manifest.modelId) ?? (await this.store.getModel(manifest.modelId))
    if (existing !== undefined) {
      const model = republished(existing, manifest, infoHash, tokenizer, publisher)
      if (probes !== undefined) await this.keepProbes(probes)
      this.models.set(manifest.modelId, existing)
      this.emit('published', model, publisher)
      return model
    }
    if (manifest.tokenizerSha256 === undefined) {
      throw new NeuronError(
        'bad_manifest',
        `the manifest of ${manifest.modelId} has no tokenizerSha256; pack it again, or ${advice}`,
      )
    }
    const model: StoredModel = {
      manifest,
      torrent: Buffer.from(torrent),
      tokenizer: Buffer.from(tokenizer),
      infoHash,
      publishedBy: publisher.nodeId,
      publisherKey: publisher.publicKey,
      publishedAt: Date.now(),
    }
    if (!(await this.store.putModel(model)))
      throw new NeuronError(
        'model_exists',
        `model ${manifest.modelId} was published meanwhile; pack yours under a new id (neuron pack --model-id) and ` +
          `publish that.`,
      )
    this.models.set(manifest.modelId, model)
    if (probes !== undefined) await this.keepProbes(probes)
    this.emit('published', model, publisher)
    return model
  }

  /**
   * The model's secret known-answer probes, if its publisher sent any: for the tracker's checks only, never for a peer.
   */
  probes(modelId: string): ProbeSet | undefined {
    return this.probeSets.get(modelId)
  }

  has(modelId: string): boolean {
    return this.models.has(modelId)
  }

  get(modelId: string): StoredModel {
    const model = this.models.get(modelId)
    if (model === undefined) {
      const known = [...this.models.keys()].sort()
      throw new NeuronError(
        'unknown_model',
        `no model ${modelId} in this swarm; known models: ${known.length === 0 ? 'none yet' : known.join(', ')}.`,
        {
          modelId,
        },
      )
    }
    return model
  }

  /** A model as hosts and clients fetch it: never its probes. */
  files(modelId: string): { manifest: Manifest; torrent: Buffer; infoHash: string } {
    const model = this.get(modelId)
    return { manifest: model.manifest, torrent: model.torrent, infoHash: model.infoHash }
  }

  /** Every published model's manifest. */
  manifests(): Manifest[] {
    return [...this.models.values()].map((m) => m.manifest)
  }

  summaries(): ModelSummary[] {
    const models = [...this.models.values()].sort((a, b) => (a.manifest.modelId < b.manifest.modelId ? -1 : 1))
    return models.map((m) => ({
      modelId: m.manifest.modelId,
      name: m.manifest.name,
      architecture: m.manifest.architecture,
      nLayer: m.manifest.nLayer,
      bytes: m.manifest.artifacts.reduce((s, a) => s + a.bytes, 0),
      infoHash: m.infoHash,
      coverage: this.registry.coverage(m.manifest.modelId, m.manifest.nLayer),
      source: { file: m.manifest.source.file, sha256: m.manifest.source.sha256 },
    }))
  }
}

/** A probe set must be of the manifest's model: its id and shape, tokens inside its vocabulary. */
function checkProbes(manifest: Manifest, set: ProbeSet): void {
  const wrong: string[] = []
  if (set.modelId !== manifest.modelId) wrong.push(`it is of model ${set.modelId}`)
  if (set.nLayer !== manifest.nLayer || set.nEmbd !== manifest.nEmbd)
    wrong.push(
      `it has ${set.nLayer} blocks of width ${set.nEmbd}, the manifest ${manifest.nLayer} of ${manifest.nEmbd}`,
    )
  const tokens = set.probes.flatMap((p) => [...p.tokens, ...p.accept.flat()])
  if (tokens.some((t) => t >= manifest.nVocab)) wrong.push(`it names tokens past the vocabulary's ${manifest.nVocab}`)
  // each boundary's width and side values as the manifest's seams
  // state them (a set from before seams had side values fails here)
  const seams = Array.from({ length: Math.max(0, manifest.nLayer - 1) }, (_, i) => i + 1).filter((b) => {
    const seam = seamAt(manifest, b)
    const held = probeBoundary(set, b)
    return held.width !== seam.values || held.side !== seamSideValues(seam)
  })
  if (seams.length > 0)
    wrong.push(
      `its hidden states at blocks ${seams.slice(0, 4).join(', ')}${seams.length > 4 ? '…' : ''} are not what the ` +
        `manifest's seams carry`,
    )
  if (wrong.length > 0) {
    throw new NeuronError(
      'bad_probes',
      `the probe set sent for ${manifest.modelId} is not of that model: ${wrong.join('; ')}. Publish with neuron ` +
        `publish, which computes it.`,
      {
        modelId: manifest.modelId,
      },
    )
  }
}

/**
 * The stored model when `manifest`, `infoHash` and `tokenizer` are exactly what `existing` holds and
 * `publisher` is the key that published it; otherwise `model_exists`, saying what differs.
 */
function republished(
  existing: StoredModel,
  manifest: Manifest,
  infoHash: string,
  tokenizer: Uint8Array,
  publisher: Publisher,
): StoredModel {
  const id = manifest.modelId
  const own =
    existing.publisherKey === null
      ? existing.publishedBy === publisher.nodeId
      : existing.publisherKey === publisher.publicKey
  if (!own) {
    throw new NeuronError(
      'model_exists',
      `model ${id} was published by another key (node ${existing.publishedBy}) and a published model never ` +
        `changes; pack yours under a new id (neuron pack --model-id) and publish that.`,
      { modelId: id, publishedBy: existing.publishedBy },
    )
  }
  // A manifest packed before tokenizers were hashed is compared by the hash of the tokenizer stored with it.
  const before: Manifest = {
    ...existing.manifest,
    tokenizerSha256: existing.manifest.tokenizerSha256 ?? tokenizerSha256(existing.tokenizer),
  }
  const now: Manifest = { ...manifest, tokenizerSha256: manifest.tokenizerSha256 ?? tokenizerSha256(tokenizer) }
  const keys = new Set([...Object.keys(before), ...Object.keys(now)] as (keyof Manifest)[])
  const differ: string[] = [...keys].filter((k) => JSON.stringify(before[k]) !== JSON.stringify(now[k]))
  if (existing.infoHash !== infoHash) differ.push(`torrent (infohash ${existing.infoHash})`)
  if (differ.length > 0) {
    throw new NeuronError(
      'model_exists',
      `model ${id} is already published and a published model never changes (this one differs in ` +
        `${differ.join(', ')}); pack the new version under a new id (neuron pack --model-id ${id}-2) and publish that.`,
      { modelId: id, differ },
    )
  }
  return existing
}
