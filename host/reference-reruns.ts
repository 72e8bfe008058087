// The spans a tracker re-runs itself, for audits of blocks no second host serves (tracker/checks/own-reruns.ts): each
// span's artifacts fetched from the swarm as any host fetches them (BitTorrent, each file checked against the
// manifest), its blocks loaded into a runtime of its own, and a shard server answering the tracker's re-runs in
// process. It is no host: it registers nowhere, serves no client, and takes only tickets the tracker signed for its
// own id. `neuron tracker --rerun-dir` starts it; the structural types below are the tracker's (it imports no host).
import { type HopLink, rejectIfError } from '../dataplane/hop-link'
import { manifestSha256 } from '../identity/tickets'
import { ShardRuntime } from '../native'
import { artifactsForBlocks, decodeFrame, type Frame, type Manifest } from '../protocol'
import { ArtifactStore } from './artifacts/artifact-store'
import { ShardServer } from './serving/shard-server'

export interface ReferenceRerunsOptions {
  /** Where the fetched artifacts are kept (`<dataDir>/models/<modelId>/`). */
  readonly dataDir: string
  /** Most bytes of artifacts loaded at once (default 2 GiB): a span past it is not re-run here. */
  readonly maxBytes?: number
  /** CPU threads of each span's runtime (default 1): the tracker's other work keeps the rest. */
  readonly threads?: number
}

/** What the tracker hands over (its OwnRerunsContext). */
interface Context {
  readonly files: (modelId: string) => { manifest: Manifest; torrent: Buffer }
  readonly announceUrl: () => string | undefined
  readonly trackerKey: string
  readonly hostId: string
  readonly log: (line: string) => void
}

export const DEFAULT_RERUN_BYTES = 2 * 1024 ** 3
/** Re-runs of one span at once: more wait for the host's own re-run and a probe. */
const SESSIONS_PER_SPAN = 2

interface Span {
  readonly bytes: number
  server?: ShardServer
  runtime?: ShardRuntime
  failed?: string
}

/** The tracker's OwnRerunsFactory, over `options`. */
export function referenceReruns(options: ReferenceRerunsOptions) {
  return (context: Context) => new ReferenceReruns(options, context)
}

class ReferenceReruns {
  private readonly spans = new Map<string, Span>()
  private store: ArtifactStore | undefined
  private used = 0
  private closed = false

  constructor(
    private readonly options: ReferenceRerunsOptions,
    private readonly context: Context,
  ) {}

  serves(modelId: string, blocks: readonly [number, number]): boolean {
    const key = `${modelId}:${blocks[0]}-${blocks[1]}`
    const known = this.spans.get(key)
    if (known !== undefined) return known.failed === undefined
    if (this.closed) return false
    let files: { manifest: Manifest; torrent: Buffer }
    try {
      files = this.context.files(modelId)
    } catch {
      return false
    }
    const bytes = artifactsForBlocks(files.manifest, blocks).reduce((sum, a) => sum + a.bytes, 0)
    if (this.used + bytes > (this.options.maxBytes ?? DEFAULT_RERUN_BYTES)) return false
    this.used += bytes
    const span: Span = { bytes }
    this.spans.set(key, span)
    this.load(span, files, blocks).catch((error: Error) => {
      span.failed = error.message
      this.used -= bytes
      this.context.log(`re-runs of ${modelId} [${blocks[0]}, ${blocks[1]}) not loaded: ${error.message}`)
    })
    return true
  }

  link(modelId: string, blocks: readonly [number, number]): HopLink | undefined {
    const server = this.spans.get(`${modelId}:${blocks[0]}-${blocks[1]}`)?.server
    return server === undefined ? undefined : new InProcessLink(server, this.context.hostId)
  }

  async close(): Promise<void> {
    this.closed = true
    for (const span of this.spans.values()) {
      await span.server?.close()
      span.runtime?.dispose()
    }
    await this.store?.close()
  }

  private async load(
    span: Span,
    { manifest, torrent }: { manifest: Manifest; torrent: Buffer },
    blocks: readonly [number, number],
  ): Promise<void> {
    this.store ??= new ArtifactStore({
      dataDir: this.options.dataDir,
      announceUrl: this.context.announceUrl,
      log: this.context.log,
    })
    const files = artifactsForBlocks(manifest, blocks).map((a) => a.file)
    const paths = await this.store.fetch(manifest, torrent, files)
    const head = blocks[1] === manifest.nLayer
    const runtime = await ShardRuntime.load({
      artifacts: paths,
      blocks: [blocks[0], blocks[1]],
      embed: blocks[0] === 0,
      head,
      threads: this.options.threads ?? 1,
      device: 'cpu',
    })
    if (this.closed) return runtime.dispose()
    span.runtime = runtime
    span.server = new ShardServer(runtime, {
      modelId: manifest.modelId,
      blocks,
      embed: blocks[0] === 0,
      head,
      nEmbd: manifest.nEmbd,
      seams: manifest,
      maxSessions: SESSIONS_PER_SPAN,
      log: this.context.log,
      tickets: {
        trackerKey: () => this.context.trackerKey,
        hostId: this.context.hostId,
        manifestSha256: manifestSha256(manifest),
      },
      limits: { maxSessionTokens: Math.min(4096, manifest.contextLength || 4096) },
    })
    this.context.log(`re-running ${manifest.modelId} [${blocks[0]}, ${blocks[1]}) here for audits`)
  }
}

/** Frames to a span's shard server in this process, as a host link carries them. */
class InProcessLink implements HopLink {
  constructor(
    private readonly server: ShardServer,
    private readonly hostId: string,
  ) {}

  async request(bytes: Uint8Array): Promise<Frame> {
    return rejectIfError(this.hostId, decodeFrame(await this.server.handle(bytes, 'tracker-rerun')))
  }

  close(): void {}
}
