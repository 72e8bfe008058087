import { z } from 'zod'
import { HubGgufModel, HubRepoId, HubSearchHit } from './hub'
import { ModelId } from './manifest'
import { rpc, WireError } from './rpc'

// Models from Hugging Face in the app: search, a repository's GGUF models, and downloads that survive a restart and
// end published on this computer. Part of the app's contract (protocol/app.ts).

const Empty = z.object({}).strict()
const Bytes = z.number().int().nonnegative()

/** One model downloading (or done, or failed) from the Hub, as the Host screen shows it. */
export const HubDownloadView = z.object({
  repo: HubRepoId,
  /** The model's name in its repository (HubGgufModel.name). */
  name: z.string().max(512),
  quant: z.string().max(32).nullable(),
  phase: z.enum(['downloading', 'adding', 'ready', 'failed']),
  downloadedBytes: Bytes,
  totalBytes: Bytes,
  bytesPerSecond: z.number().nonnegative(),
  /** At the current speed; null while unknown. */
  secondsLeft: z.number().nonnegative().nullable(),
  /** The published model's id once added (phase ready). */
  modelId: ModelId.nullable(),
  error: WireError.nullable(),
})
export type HubDownloadView = z.infer<typeof HubDownloadView>

/** A repository's model as the Host screen offers it. */
export const HubModelChoice = HubGgufModel.extend({
  /** The swarm's model packed from this very file (same sha256), if any: hosted without the GGUF. */
  swarmModelId: ModelId.nullable(),
})
export type HubModelChoice = z.infer<typeof HubModelChoice>

/** hub.*: the Host screen's "From Hugging Face". */
export const HubMethods = {
  'hub.search': rpc(
    z.object({ query: z.string().trim().min(1, 'type part of a model’s name').max(200) }).strict(),
    z.object({ hits: z.array(HubSearchHit).max(100) }),
  ),
  /** A repository's GGUF models (split parts as one), at its current commit. */
  'hub.models': rpc(
    z.object({ repo: HubRepoId }).strict(),
    z.object({
      repo: HubRepoId,
      gated: z.boolean(),
      models: z.array(HubModelChoice).max(1000),
      /** Files offered as no model, and why (a split with parts missing…). */
      skipped: z.array(z.object({ path: z.string(), why: z.string() })).max(1000),
    }),
  ),
  /** Starts (or resumes) downloading a model; once complete it is published from this computer like an added file. */
  'hub.download': rpc(
    z.object({ repo: HubRepoId, name: z.string().min(1).max(512) }).strict(),
    z.object({ downloads: z.array(HubDownloadView) }),
  ),
  'hub.downloads': rpc(Empty, z.object({ downloads: z.array(HubDownloadView) })),
  /** Forgets a failed or finished download (its files stay until a new download of it). */
  'hub.dismiss': rpc(
    z.object({ repo: HubRepoId, name: z.string().min(1).max(512) }).strict(),
    z.object({ downloads: z.array(HubDownloadView) }),
  ),
} as const
