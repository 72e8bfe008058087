import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'
import { HubApi } from '../../host/hub/hub-api'
import type { HubConfig } from '../../host/hub/hub-config'
import { downloadHubModel, findHubModel } from '../../host/hub/pull'
import { type HubDownloadView, HubRepoId, toWireError } from '../../protocol'
import { parseJsonFile, writeFileDurably } from './durable-file'

/** The downloads still to finish, kept in the data dir so that a restart resumes them (their `.part` files stay). */
const Pending = z.object({
  downloads: z.array(z.object({ repo: HubRepoId, name: z.string().min(1).max(512) })).max(64),
})
type Pending = z.infer<typeof Pending>

export interface HubDownloadsDeps {
  readonly dataDir: string
  readonly config: () => Promise<HubConfig>
  /** Publishes a downloaded GGUF from this computer (as models.add does); returns its model id. */
  readonly add: (path: string) => Promise<string>
  readonly log: (line: string) => void
}

interface Entry {
  view: HubDownloadView
  readonly stop: AbortController
}

/**
 * The app's downloads from the Hub: each runs in the background to the end (download, then publish), reports its
 * progress in `list()`, and is written down until it ends, so that an app restarted midway resumes it.
 */
export class HubDownloads {
  private readonly entries = new Map<string, Entry>()
  private closed = false

  constructor(private readonly deps: HubDownloadsDeps) {}

  private get file(): string {
    return join(this.deps.dataDir, 'hub-downloads.json')
  }

  /** Resumes the downloads a previous run left unfinished. */
  async restore(): Promise<void> {
    const text = await readFile(this.file, 'utf8').catch(() => undefined)
    if (text === undefined) return
    const parsed = parseJsonFile(this.file, text, Pending)
    if ('problem' in parsed) {
      this.deps.log(`${parsed.problem}; starting without the downloads it listed`)
      return
    }
    for (const d of parsed.value.downloads) {
      this.deps.log(`resuming the download of ${d.repo} ${d.name}`)
      void this.start(d.repo, d.name)
    }
  }

  list(): HubDownloadView[] {
    return [...this.entries.values()].map((e) => e.view)
  }

  /** Starts a download, or leaves one of the same model running; returns at once. */
  async start(repo: string, name: string): Promise<HubDownloadView[]> {
    const key = `${repo}\0${name}`
    const running = this.entries.get(key)
    if (running !== undefined && (running.view.phase === 'downloading' || running.view.phase === 'adding'))
      return this.list()
    const entry: Entry = {
      stop: new AbortController(),
      view: {
        repo,
        name,
        quant: null,
        phase: 'downloading',
        downloadedBytes: 0,
        totalBytes: 0,
        bytesPerSecond: 0,
        secondsLeft: null,
        modelId: null,
        error: null,
      },
    }
    this.entries.set(key, entry)
    await this.remember()
    void this.run(entry)
    return this.list()
  }

  async dismiss(repo: string, name: string): Promise<HubDownloadView[]> {
    const key = `${repo}\0${name}`
    this.entries.get(key)?.stop.abort(new Error('dismissed'))
    this.entries.delete(key)
    await this.remember()
    return this.list()
  }

  /** Stops every transfer where it stands (the parts stay, and the list on disk: the next start resumes them). */
  close(): void {
    this.closed = true
    for (const e of this.entries.values()) e.stop.abort(new Error('the app is closing'))
  }

  private async run(entry: Entry): Promise<void> {
    const { repo, name } = entry.view
    const update = (change: Partial<HubDownloadView>) => {
      entry.view = { ...entry.view, ...change }
    }
    try {
      const api = new HubApi(await this.deps.config())
      const found = await findHubModel(api, { repo }, { name })
      const { files, bytes } = found.model
      /** Bytes of the parts before part `n` (1-based): they are done when part n reports. */
      const before = (n: number) => files.slice(0, n - 1).reduce((sum, f) => sum + f.bytes, 0)
      update({ quant: found.model.quant, totalBytes: bytes })
      const gguf = await downloadHubModel({
        ...found,
        api,
        dataDir: this.deps.dataDir,
        signal: entry.stop.signal,
        log: (line) => this.deps.log(`hub: ${line}`),
        onProgress: (p) => {
          const downloadedBytes = before(p.part) + p.downloadedBytes
          update({
            downloadedBytes,
            bytesPerSecond: p.bytesPerSecond,
            secondsLeft: p.bytesPerSecond > 0 ? (bytes - downloadedBytes) / p.bytesPerSecond : null,
          })
        },
      })
      update({ phase: 'adding', downloadedBytes: bytes, bytesPerSecond: 0, secondsLeft: 0 })
      const modelId = await this.deps.add(gguf)
      update({ phase: 'ready', modelId })
      this.deps.log(`hub: ${repo} ${name} downloaded and published as ${modelId}`)
    } catch (error) {
      if (entry.stop.signal.aborted) return
      update({ phase: 'failed', error: toWireError(error), bytesPerSecond: 0, secondsLeft: null })
      this.deps.log(`hub: ${repo} ${name} failed: ${error instanceof Error ? error.message : String(error)}`)
    }
    if (!this.closed) await this.remember()
  }

  /** Writes down the downloads still running. */
  private async remember(): Promise<void> {
    const downloads = [...this.entries.values()]
      .filter((e) => e.view.phase === 'downloading' || e.view.phase === 'adding')
      .map((e) => ({ repo: e.view.repo, name: e.view.name }))
    await writeFileDurably(this.file, `${JSON.stringify({ downloads } satisfies Pending, null, 2)}\n`)
  }
}
