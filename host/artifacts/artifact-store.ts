import { constants } from 'node:fs'
import { copyFile, link, lstat, mkdir, open, rm, stat } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type WebTorrent from 'webtorrent'
import { type Manifest, type ManifestArtifact, NeuronError } from '../../protocol'
import type { FetchProgress } from './fetch-progress'
import { announcingTo } from './model-torrent'
import { Sha256Workers } from './sha256-workers'
import './wire-reads'
import { onStoredPiece, StreamedSha256 } from './streamed-sha256'
import { isDone, onceReady, torrentAddress, torrentClient } from './torrent-client'
import { downloadFiles } from './torrent-download'
import { identityOf, sameIdentity, trustedPieces, VerifiedFiles } from './verified-files'
import { verifyArtifact } from './verify-artifact'

export interface ArtifactStoreOptions {
  /** Artifacts live in `<dataDir>/models/<modelId>/<file>`. */
  readonly dataDir: string
  /** Most bytes of artifacts this host keeps on disk. */
  readonly quotaBytes?: number
  /** BitTorrent TCP port; 0 picks a free one. */
  readonly torrentPort?: number
  /** Address the BitTorrent TCP port binds to; absent, every interface. */
  readonly torrentHost?: string
  /**
   * The swarm's BitTorrent tracker to announce to, instead of the URLs in the torrent: the tracker this host joined.
   * A torrent keeps the address it was made with (127.0.0.1 for an app's embedded swarm, an old port after a restart),
   * which names another computer, or nothing, from where this host is.
   */
  readonly announceUrl?: () => string | undefined
  /**
   * Ask the home router (NAT-PMP, UPnP-IGD) to forward the BitTorrent
   * port, as webtorrent can, so peers elsewhere fetch from this host.
   */
  readonly portMapping?: boolean
  readonly log?: (line: string) => void
  /**
   * Trust `<dataDir>/models/<modelId>.verified.json`, the record of files already checked, for files
   * whose stat is unchanged, so a restart does not hash them again. Default: yes, unless
   * NEURON_NO_VERIFIED_CACHE=1 (the baseline bench:host-restart measures).
   */
  readonly verifiedRecord?: boolean
}

/** How many times a file whose sha256 is wrong is thrown away and fetched again. */
const MAX_REFETCH = 3

/**
 * A host's artifacts: fetched over BitTorrent (TCP only; only the files its range needs, from the
 * model's one torrent), checked against the manifest's sha256 before anything may load them,
 * and seeded to other hosts for as long as the store is open.
 */
export class ArtifactStore {
  private readonly client: WebTorrent.Instance
  private readonly ready: Promise<void>
  /** The manifest's sha256 of fetched files, computed off the main thread as their pieces are stored. */
  private readonly sha256 = new Sha256Workers()

  constructor(private readonly options: ArtifactStoreOptions) {
    const torrent = torrentClient(options)
    this.client = torrent.client
    this.ready = torrent.ready
  }

  get modelsDir(): string {
    return join(this.options.dataDir, 'models')
  }

  pathOf(modelId: string, file: string): string {
    return join(this.modelsDir, modelId, file)
  }

  /**
   * Seeds a packed model directory (the publisher's side): checks every artifact against the
   * manifest, links it into this store like any host's, and seeds the whole torrent.
   */
  async seedDirectory(dir: string, manifest: Manifest, torrent: Buffer): Promise<string> {
    const modelDir = join(this.modelsDir, manifest.modelId)
    await mkdir(modelDir, { recursive: true })
    const record = await this.openRecord(manifest.modelId)
    for (const a of manifest.artifacts) {
      const target = join(modelDir, a.file)
      if (await record?.trusts(a, target)) continue
      // lstat: a link left at the target (dangling or not) is not ours to write through
      const linked = (await lstat(target).catch(() => undefined)) === undefined
      // A hard link costs no copy; across file systems, copy (never over a file another writer made meanwhile).
      // The link changes the inode's ctime, so the file is checked (and recorded) after it, as the store holds it.
      if (linked)
        await link(join(dir, a.file), target).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== 'EXDEV' && e.code !== 'EPERM') throw e
          return copyFile(join(dir, a.file), target, constants.COPYFILE_EXCL)
        })
      try {
        await this.check(record, target, a)
      } catch (error) {
        if (linked) await rm(target, { force: true })
        throw error
      }
    }
    await this.saveRecord(manifest.modelId, record)
    await this.ready
    const t = await this.addTorrent(torrent, false, await this.startupBitfield(manifest, record))
    return t.infoHash
  }

  /**
   * Fetches `files` of a model (skipping any already here and intact), verifies each against the
   * manifest, and keeps seeding them. Returns their paths once every one is verified.
   */
  async fetch(
    manifest: Manifest,
    torrent: Buffer,
    files: readonly string[],
    onProgress?: (p: FetchProgress) => void,
  ): Promise<string[]> {
    const wanted = files.map((f) => {
      const artifact = manifest.artifacts.find((a) => a.file === f)
      if (artifact === undefined) throw new NeuronError('unknown_artifact', `${manifest.modelId} has no artifact ${f}.`)
      return artifact
    })
    await this.checkQuota(manifest, wanted)
    await mkdir(join(this.modelsDir, manifest.modelId), { recursive: true })
    const record = await this.openRecord(manifest.modelId)
    await this.ready
    for (let attempt = 0; ; attempt++) {
      const t = await this.addTorrent(torrent, true, await this.startupBitfield(manifest, record))
      const streamed = new StreamedSha256(manifest, wanted, this.sha256)
      const stopStreaming = onStoredPiece(t, (index, piece) => streamed.add(index, piece))
      try {
        await downloadFiles(t, wanted, onProgress)
      } finally {
        stopStreaming()
      }
      const bad: ManifestArtifact[] = []
      for (const a of wanted) {
        try {
          const digest = await streamed.digestOf(a.file).catch((e: Error) => this.options.log?.(e.message))
          await this.check(record, this.pathOf(manifest.modelId, a.file), a, digest ?? undefined)
        } catch (error) {
          this.options.log?.(error instanceof Error ? error.message : String(error))
          bad.push(a)
        }
      }
      await this.saveRecord(manifest.modelId, record)
      if (bad.length === 0) return wanted.map((a) => this.pathOf(manifest.modelId, a.file))
      if (attempt + 1 >= MAX_REFETCH) {
        throw new NeuronError(
          'artifact_corrupt',
          `${bad.map((a) => a.file).join(', ')} failed sha256 ${MAX_REFETCH} times; the swarm may be serving a ` +
            `different model under ${manifest.modelId}.`,
        )
      }
      // Never load a bad file: drop it and its torrent state, then fetch it again from the swarm.
      await new Promise<void>((resolve) => this.client.remove(t, {}, () => resolve()))
      for (const a of bad) await rm(this.pathOf(manifest.modelId, a.file), { force: true })
    }
  }

  /** Where the BitTorrent TCP server listens. */
  async torrentAddress(): Promise<AddressInfo> {
    await this.ready
    return torrentAddress(this.client)
  }

  /** Seeding peers and bytes uploaded, for the dashboard. */
  stats(): { torrents: number; uploadedBytes: number; peers: number } {
    return {
      torrents: this.client.torrents.length,
      uploadedBytes: this.client.torrents.reduce((s, t) => s + t.uploaded, 0),
      peers: this.client.torrents.reduce((s, t) => s + t.numPeers, 0),
    }
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.client.destroy(() => resolve()))
    await this.sha256.close()
  }

  private async addTorrent(
    torrent: Buffer,
    deselect: boolean,
    bitfield: Uint8Array | undefined,
  ): Promise<WebTorrent.Torrent> {
    const existing = await this.client.get(torrent)
    if (existing) {
      await onceReady(existing)
      return existing
    }
    // No piece cache: webtorrent's (cache-chunk-store) copies every 16 KiB block it serves out of the
    // cached piece (Uint8Array.slice); reading each block from the page cache costs a seeder half the CPU.
    // Without a cache, a stored piece's bytes are free once written: onStoredPiece hands them to the sha256 workers.
    const url = this.options.announceUrl?.()
    const t = this.client.add(url === undefined ? torrent : await announcingTo(torrent, url), {
      path: this.modelsDir,
      deselect,
      storeCacheSlots: 0,
      ...(bitfield === undefined ? {} : { bitfield }),
    } as WebTorrent.TorrentOptions)
    // Until ready, 'verified' is webtorrent hashing pieces already on disk (with a startup bitfield, one
    // piece of each file it names, as a spot check).
    let hashed = 0
    const count = () => hashed++
    // webtorrent 3 emits 'verified' per piece; its @types predate it.
    const events = t as unknown as NodeJS.EventEmitter
    events.on('verified', count)
    try {
      await onceReady(t)
    } finally {
      events.off('verified', count)
    }
    const taken = bitfield === undefined ? 0 : bitfield.reduce((n, byte) => n + popcount(byte), 0)
    if (hashed > 0 || taken > 0)
      this.options.log?.(
        `${t.name}: ${taken} pieces on disk taken from the record of verified files, ${hashed} found intact by ` +
          `hashing them`,
      )
    return t
  }

  private async openRecord(modelId: string): Promise<VerifiedFiles | undefined> {
    if (!(this.options.verifiedRecord ?? process.env.NEURON_NO_VERIFIED_CACHE !== '1')) return undefined
    return VerifiedFiles.open(join(this.modelsDir, `${modelId}.verified.json`), this.options.log)
  }

  private async saveRecord(modelId: string, record: VerifiedFiles | undefined): Promise<void> {
    // The record only saves work: a failure to write it costs a re-hash at the next start, nothing more.
    await record
      ?.save()
      .catch((e: unknown) =>
        this.options.log?.(
          `could not record the verified artifacts of ${modelId}: ${e instanceof Error ? e.message : e}`,
        ),
      )
  }

  /** Checks the file against the manifest unless the record trusts it, then records it as checked. */
  private async check(
    record: VerifiedFiles | undefined,
    path: string,
    a: ManifestArtifact,
    streamedSha256?: string,
  ): Promise<void> {
    if (await record?.trusts(a, path)) return
    record?.forget(a.file)
    const before = await identityOf(path)
    await verifyArtifact(path, a, streamedSha256, this.options.log)
    if (record === undefined) return
    // On disk before it is trusted: after a power cut, pages never written back would read as zeros under a
    // stat the record still matches.
    const file = await open(path, 'r')
    await file.datasync().finally(() => file.close())
    const after = await identityOf(path)
    // Changed while it was hashed: what was checked may not be what is there, so it is not recorded.
    if (before !== undefined && after !== undefined && sameIdentity(before, after)) record.remember(a, after)
  }

  /**
   * Pieces webtorrent may take as present without hashing them: those wholly in files the record
   * trusts. Undefined (webtorrent hashes every piece on disk, as before) when a file on disk is not
   * trusted: webtorrent hashes no piece outside a startup bitfield but takes it as missing, so it would
   * fetch that file again instead of checking it (lib/torrent.js, _verifyPiecesUsingBitfield).
   */
  private async startupBitfield(
    manifest: Manifest,
    record: VerifiedFiles | undefined,
  ): Promise<Uint8Array | undefined> {
    if (record === undefined) return undefined
    const trusted = new Set<string>()
    for (const a of manifest.artifacts) {
      const path = this.pathOf(manifest.modelId, a.file)
      if (await record.trusts(a, path)) trusted.add(a.file)
      else if (((await identityOf(path))?.size ?? 0n) > 0n) return undefined
    }
    return trusted.size === 0 ? undefined : trustedPieces(manifest, trusted)
  }

  private async checkQuota(manifest: Manifest, wanted: readonly ManifestArtifact[]): Promise<void> {
    const quota = this.options.quotaBytes
    if (quota === undefined) return
    let needed = 0
    for (const a of wanted) {
      const have = await stat(this.pathOf(manifest.modelId, a.file)).catch(() => undefined)
      if (have?.size !== a.bytes) needed += a.bytes
    }
    const used = this.client.torrents.reduce((s, t) => s + t.files.filter(isDone).reduce((x, f) => x + f.length, 0), 0)
    if (used + needed > quota) {
      throw new NeuronError(
        'disk_quota',
        `serving this range needs ${needed} more bytes of artifacts, but the disk quota is ${quota} bytes with ` +
          `${used} in use; raise the quota or take a smaller range.`,
        {
          needed,
          used,
          quota,
        },
      )
    }
  }
}

function popcount(byte: number): number {
  let n = 0
  for (let b = byte; b !== 0; b &= b - 1) n++
  return n
}
