import { ggufModels } from '../../../host/hub/gguf-choices'
import { HubApi } from '../../../host/hub/hub-api'
import type { HubConfig } from '../../../host/hub/hub-config'
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
      return { repo: info.id, gated: info.gated !== undefined && info.gated !== false, models, skipped }
    },
    'hub.download': ({ repo, name }) => this.downloads.start(repo, name).then((downloads) => ({ downloads })),
    'hub.downloads': async () => ({ downloads: this.downloads.list() }),
    'hub.dismiss': ({ repo, name }) => this.downloads.dismiss(repo, name).then((downloads) => ({ downloads })),
  }

  constructor(
    private readonly config: () => Promise<HubConfig>,
    private readonly downloads: HubDownloads,
  ) {}

  private async api(): Promise<HubApi> {
    return new HubApi(await this.config())
  }
}
