import { join } from 'node:path'
import { type HubGgufModel, NeuronError } from '../../protocol'
import { packOnce } from '../packs'
import { readManifest } from '../publish'
import { ggufModels, pickModel } from './gguf-choices'
import { HubApi, repoId } from './hub-api'
import type { HubConfig } from './hub-config'
import { downloadHubFile, type HubDownloadProgress } from './hub-download'

/** `owner/name` or `owner/name:Q4_K_M`, also as a Hub address (`https://huggingface.co/owner/name`, `hf.co/…`). */
export interface HubModelRef {
  readonly repo: string
  readonly quant?: string
}

export function parseModelRef(given: string): HubModelRef {
  const trimmed = given.trim().replace(/^(?:https?:\/\/)?(?:www\.)?(?:huggingface\.co|hf\.co)\//i, '')
  const [path = '', quant] = trimmed.split(':')
  const repo = repoId(path.replace(/\/+$/, ''))
  if (quant !== undefined && !/^[A-Za-z0-9_]{1,32}$/.test(quant))
    throw new NeuronError('bad_option', `${JSON.stringify(quant)} is not a quantization; write e.g. ${repo}:Q4_K_M`)
  return quant === undefined || quant === '' ? { repo } : { repo, quant }
}

export interface PullOptions {
  readonly ref: HubModelRef
  /** A file of the repository to pull instead of a quantization (for a split model, any of its parts). */
  readonly file?: string
  /** Downloads go to `<dataDir>/hub/<owner>/<name>/`, the pack to `<dataDir>/published/<model id>/`. */
  readonly dataDir: string
  readonly config: HubConfig
  readonly onProgress?: (p: HubDownloadProgress & { readonly part: number; readonly parts: number }) => void
  readonly log?: (line: string) => void
  readonly signal?: AbortSignal
  /** For tests: see downloadHubFile. */
  readonly retryDelayMs?: number
}

export interface Pulled {
  readonly repo: string
  readonly revision: string
  readonly model: HubGgufModel
  /** The downloaded GGUF (the first part of a split model). */
  readonly gguf: string
  /** The packed model, as `neuron publish` takes it. */
  readonly packDir: string
  readonly modelId: string
}

/** A model found in a repository, at the commit its files will be fetched from. */
export interface FoundHubModel {
  readonly repo: string
  readonly revision: string
  readonly model: HubGgufModel
}

/** The model `ref` (or `file`) names in its repository, at the repository's current commit. */
export async function findHubModel(
  api: HubApi,
  ref: HubModelRef,
  select: { readonly file?: string; readonly name?: string } = {},
): Promise<FoundHubModel> {
  const { repo } = ref
  const info = await api.model(repo)
  const revision = info.sha ?? 'main'
  const { models } = ggufModels(await api.files(repo, revision))
  return { repo, revision, model: chosen(models, ref, select) }
}

export interface HubModelDownload extends FoundHubModel {
  readonly api: HubApi
  readonly dataDir: string
  readonly onProgress?: PullOptions['onProgress']
  readonly log?: (line: string) => void
  readonly signal?: AbortSignal
  readonly retryDelayMs?: number
}

/** Downloads every file of a found model into `<dataDir>/hub/<owner>/<name>/`; returns the first file's path. */
export async function downloadHubModel(o: HubModelDownload): Promise<string> {
  const dir = join(o.dataDir, 'hub', ...o.repo.split('/'))
  const paths: string[] = []
  for (const [i, file] of o.model.files.entries()) {
    const parts = o.model.files.length
    paths.push(
      await downloadHubFile({
        api: o.api,
        repo: o.repo,
        revision: o.revision,
        file,
        dir,
        ...(o.onProgress ? { onProgress: (p) => o.onProgress?.({ ...p, part: i + 1, parts }) } : {}),
        ...(o.log ? { log: o.log } : {}),
        ...(o.signal ? { signal: o.signal } : {}),
        ...(o.retryDelayMs === undefined ? {} : { retryDelayMs: o.retryDelayMs }),
      }),
    )
  }
  return paths[0] as string
}

/**
 * Finds a GGUF model in a Hugging Face repository, downloads it (resumable, checked against the Hub's sha256) and packs
 * it for publishing: what `neuron pull` does.
 */
export async function pullModel(options: PullOptions): Promise<Pulled> {
  const api = new HubApi(options.config)
  const found = await findHubModel(api, options.ref, options.file === undefined ? {} : { file: options.file })
  const { repo, revision, model } = found
  options.log?.(
    `${repo}: ${model.name} (${model.quant ?? 'no quantization named'}, ${(model.bytes / 1e9).toFixed(2)} GB` +
      `${model.files.length > 1 ? ` in ${model.files.length} parts` : ''}) at ${revision.slice(0, 12)}`,
  )
  const gguf = await downloadHubModel({
    ...found,
    api,
    dataDir: options.dataDir,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.log ? { log: options.log } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.retryDelayMs === undefined ? {} : { retryDelayMs: options.retryDelayMs }),
  })
  const packDir = await packOnce(join(options.dataDir, 'published'), gguf, options.log ?? (() => {}))
  return { repo, revision, model, gguf, packDir, modelId: (await readManifest(packDir)).modelId }
}

function chosen(
  models: readonly HubGgufModel[],
  ref: HubModelRef,
  select: { readonly file?: string; readonly name?: string },
): HubGgufModel {
  const { repo } = ref
  const offered = models
    .filter((m) => !m.projector)
    .map((m) => m.quant ?? m.name)
    .join(', ')
  if (models.length === 0)
    throw new NeuronError('hub_not_found', `${repo} has no GGUF model; search for a -GGUF repository`)
  if (select.file !== undefined || select.name !== undefined) {
    const found = models.find((m) => m.name === select.name || m.files.some((f) => f.path === select.file))
    if (found === undefined)
      throw new NeuronError('hub_not_found', `${repo} has no GGUF ${select.file ?? select.name}; it offers ${offered}`)
    return found
  }
  const found = pickModel(models, ref.quant)
  if (found === undefined) {
    throw new NeuronError(
      'hub_not_found',
      `${repo} has no ${ref.quant ?? 'text'} model; it offers ${offered || 'only vision projectors'}`,
    )
  }
  return found
}
