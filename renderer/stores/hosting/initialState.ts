import type { HostingPreview, HostingStatus } from '../../../protocol/app'
import type { BlockRange } from '../../../protocol/blocks'
import type { ModelSummary } from '../../../protocol/swarm'
import type { ShownError } from '../../api/errorText'

export interface HostingState {
  models: ModelSummary[]
  modelsError: ShownError | null
  adding: boolean
  addError: ShownError | null
  selectedModelId: string | null
  preview: HostingPreview | null
  previewLoading: boolean
  previewError: ShownError | null
  /** The range the user picked: the proposal or one of the alternatives. */
  chosenBlocks: BlockRange | null
  status: HostingStatus | null
  /** A start/pause/resume/stop that failed. */
  actionError: ShownError | null
  acting: boolean
}

export const initialHostingState: HostingState = {
  models: [],
  modelsError: null,
  adding: false,
  addError: null,
  selectedModelId: null,
  preview: null,
  previewLoading: false,
  previewError: null,
  chosenBlocks: null,
  status: null,
  actionError: null,
  acting: false,
}
