import type { HubDownloadView, HubModelChoice } from '../../../protocol/app'
import type { HubSearchHit } from '../../../protocol/hub'
import type { ShownError } from '../../api/errorText'

export interface HubState {
  query: string
  searching: boolean
  /** null before the first search. */
  hits: HubSearchHit[] | null
  /** The repository whose models are listed; null before one is opened. */
  repo: string | null
  gated: boolean
  models: HubModelChoice[] | null
  loadingModels: boolean
  downloads: HubDownloadView[]
  error: ShownError | null
}

export const initialHubState: HubState = {
  query: '',
  searching: false,
  hits: null,
  repo: null,
  gated: false,
  models: null,
  loadingModels: false,
  downloads: [],
  error: null,
}
