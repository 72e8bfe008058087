import { ggufModels } from '../../../host/hub/gguf-choices'
import { HubApi } from '../../../host/hub/hub-api'
import type { HubConfig } from '../../../host/hub/hub-config'
import type { ModelSummary } from '../../../protocol'
import type { HubDownloads } from '../hub-downloads'
import type { GroupHandlers } from './registry'

/** Hugging Face on the Host screen: search, a repository's GGUF models, downloads that end published here. */
export class HubController {
  readonly handlers: GroupHandlers<'hub'> = {
    'hub.search': async ({ query }) => ({ hits: await (await this.api()).search(query) }),
    'hub.models': async ({ repo }) => {
      const api = await this.api()
      const info = await api.model(repo)
      const { models, skipped } = ggufModels(await api.files(repo, info.sha ?? 'main'))
      // A model on the swarm packed from the same file needs no download to be hosted (a split one's sha256 is of
      // its parts together, so it is not matched here).
      const onSwarm = await this.swarmModels().catch(() => [])
      const bySha = new Map(onSwarm.flatMap((m) => (m.source === undefined ? [] : [[m.source.sha256, m.modelId]])))
      return {
        repo: info.id,
        gated: Boolean(info.gated), // false, or how access is granted ("auto", "manual")
        models: models.map((m) => ({
          ...m,
          swarmModelId: m.files.length === 1 ? (bySha.get(m.files[0]?.sha256 ?? '') ?? null) : null,
        })),
        skipped,
      }
    },
    'hub.download': ({ repo, name }) => this.downloads.start(repo, name).then((downloads) => ({ downloads })),
    'hub.downloads': async () => ({ downloads: this.downloads.list() }),
    'hub.dismiss': ({ repo, name }) => this.downloads.dismiss(repo, name).then((downloads) => ({ downloads })),
  }

  constructor(
    private readonly config: () => Promise<HubConfig>,
    private readonly downloads: HubDownloads,
    private readonly swarmModels: () => Promise<readonly ModelSummary[]>,
  ) {}

  private async api(): Promise<HubApi> {
    return new HubApi(await this.config())
  }
}
