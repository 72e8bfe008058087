import type { z } from 'zod'
import {
  HubModelInfo,
  HubRepoId,
  HubSearchAnswer,
  type HubSearchHit,
  type HubTreeEntry,
  HubTreePage,
  NeuronError,
} from '../../protocol'
import type { HubConfig } from './hub-config'
import { boundedJson, type HubTarget, hubGet } from './hub-http'

/** A tree page of 1 000 files is about 300 KB; a search answer far less. */
const JSON_LIMIT = 8 << 20
/** The tree API pages by 1 000 files (Link: rel="next"); no GGUF repository comes near 50 pages. */
const MAX_TREE_PAGES = 50

/** The Hub's JSON API, as Neuron reads it: search, a repository's commit, its files. */
export class HubApi {
  constructor(readonly config: HubConfig) {}

  /** Repositories with GGUF files matching `query`, most downloaded first. */
  async search(query: string, limit = 20): Promise<HubSearchHit[]> {
    const params = new URLSearchParams({
      search: query.trim().slice(0, 200),
      filter: 'gguf',
      sort: 'downloads',
      direction: '-1',
      limit: String(Math.max(1, Math.min(100, Math.floor(limit)))),
    })
    return this.json(`${this.config.endpoint}/api/models?${params}`, { repo: query }, HubSearchAnswer)
  }

  /** The repository's current commit (files are fetched at it) and whether it is gated. */
  async model(repo: string): Promise<HubModelInfo> {
    const id = repoId(repo)
    const info = await this.json(`${this.config.endpoint}/api/models/${id}`, { repo: id }, HubModelInfo)
    return info
  }

  /** Every file of the repository at `revision`, with sizes and (for LFS files) sha256. */
  async files(repo: string, revision: string): Promise<HubTreeEntry[]> {
    const id = repoId(repo)
    const entries: HubTreeEntry[] = []
    let url: string | undefined =
      `${this.config.endpoint}/api/models/${id}/tree/${encodeURIComponent(revision)}?recursive=true`
    for (let page = 0; url !== undefined; page++) {
      if (page >= MAX_TREE_PAGES)
        throw new NeuronError('hub_bad_answer', `${id} lists more than ${MAX_TREE_PAGES} pages of files; pass --file`)
      const response = await hubGet(this.config, url, { repo: id, revision })
      entries.push(...parse(HubTreePage, await boundedJson(response, JSON_LIMIT, `${id}'s files`), `${id}'s files`))
      url = nextPage(response.headers.get('link'), this.config.endpoint)
    }
    return entries
  }

  /** Where a file's bytes are: the endpoint's `resolve` path, which redirects to a CDN. */
  fileUrl(repo: string, revision: string, path: string): string {
    const encoded = path.split('/').map(encodeURIComponent).join('/')
    return `${this.config.endpoint}/${repoId(repo)}/resolve/${encodeURIComponent(revision)}/${encoded}`
  }

  private async json<T extends z.ZodTypeAny>(url: string, target: HubTarget, schema: T): Promise<z.infer<T>> {
    const response = await hubGet(this.config, url, target)
    return parse(schema, await boundedJson(response, JSON_LIMIT, target.repo), target.repo)
  }
}

function parse<T extends z.ZodTypeAny>(schema: T, value: unknown, what: string): z.infer<T> {
  const parsed = schema.safeParse(value)
  if (parsed.success) return parsed.data
  const issue = parsed.error.issues[0]
  throw new NeuronError(
    'hub_bad_answer',
    `the Hub's answer for ${what} is not what Neuron reads (${issue?.path.join('.') || 'top'}: ${issue?.message}); ` +
      'is HF_ENDPOINT a Hub?',
  )
}

/** Checks a repository id typed by a person, with a message that shows the form. */
export function repoId(given: string): string {
  const parsed = HubRepoId.safeParse(given)
  if (!parsed.success) {
    throw new NeuronError(
      'bad_option',
      `${JSON.stringify(given.slice(0, 100))} is not a Hugging Face repository id; write owner/name, ` +
        'e.g. TheBloke/TinyLlama-1.1B-Chat-v1.0-GGUF',
    )
  }
  return parsed.data
}

/** The next page of a paged answer (RFC 8288 Link header), only on the endpoint's own origin. */
function nextPage(link: string | null, endpoint: string): string | undefined {
  const match = link?.match(/<([^>]+)>\s*;\s*rel="?next"?/)
  if (match?.[1] === undefined) return undefined
  const next = new URL(match[1], endpoint)
  if (next.origin !== new URL(endpoint).origin)
    throw new NeuronError('hub_bad_answer', `${endpoint} pointed its next page elsewhere (${next.origin})`)
  return next.href
}
