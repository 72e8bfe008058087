import { open, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { packOnce } from '../../host/packs'
import { type Publication, publishModel, readManifest } from '../../host/publish'
import type { NodeIdentity } from '../../identity/keys'
import { NeuronError } from '../../protocol'

const GGUF_MAGIC = Buffer.from('GGUF')

/** Refuses anything that is not a readable file starting with the GGUF magic, naming what it found. */
export async function checkGguf(path: string): Promise<void> {
  const info = await stat(path).catch(() => undefined)
  if (info === undefined) throw new NeuronError('not_gguf', `${path} does not exist; pick a .gguf model file`, { path })
  if (!info.isFile()) throw new NeuronError('not_gguf', `${path} is not a file; pick a .gguf model file`, { path })
  const fh = await open(path, 'r')
  const head = Buffer.alloc(4)
  try {
    await fh.read(head, 0, 4, 0)
  } finally {
    await fh.close()
  }
  if (!head.equals(GGUF_MAGIC)) {
    const shown =
      info.size === 0
        ? 'it is empty'
        : `it starts with ${JSON.stringify(head.subarray(0, Math.min(4, info.size)).toString('latin1'))}`
    throw new NeuronError('not_gguf', `${path} is not a GGUF file (${shown}); pick a .gguf model file`, { path })
  }
}

/**
 * Packs GGUF files into `<dataDir>/published/<modelId>` (one block per artifact; an earlier pack
 * of the same source is reused) and publishes them to the tracker; this process seeds them until closed.
 */
export class ModelPublisher {
  private readonly publications = new Map<string, Publication>()

  constructor(
    private readonly dataDir: string,
    private readonly log: (line: string) => void,
  ) {}

  get publishedDir(): string {
    return join(this.dataDir, 'published')
  }

  /** Returns the model id; publishing the same model again to the same tracker is a no-op. */
  async publish(source: string, trackerUrl: string, identity: NodeIdentity): Promise<string> {
    await checkGguf(source)
    const dir = await packOnce(this.publishedDir, source, this.log)
    const manifest = await readManifest(dir)
    if (this.publications.has(manifest.modelId)) return manifest.modelId
    const publication = await publishModel(dir, trackerUrl, identity, join(this.dataDir, 'publisher'))
    this.publications.set(manifest.modelId, publication)
    this.log(`published ${manifest.modelId} (infohash ${publication.infoHash}); seeding`)
    return manifest.modelId
  }

  /** Stops seeding everything (a new tracker needs the models published again). */
  async close(): Promise<void> {
    const all = [...this.publications.values()]
    this.publications.clear()
    await Promise.all(all.map((p) => p.close()))
  }
}
