// A placement request that cannot be answered: a model and swarm view that disagree, a host or budget out of range.
import { NeuronError } from '../../protocol'
import type { SwarmView } from '../routing/swarm-view'
import type { JoiningHost, PlacementModel, PlacementOptions } from './types'

/** Throws bad_placement_request, naming the figure that was wrong and what to pass instead. */
export function checkPlacementRequest(
  view: SwarmView,
  model: PlacementModel,
  host: JoiningHost,
  options: PlacementOptions,
): void {
  const fail = (message: string, details: Record<string, unknown>) => {
    throw new NeuronError('bad_placement_request', message, details)
  }
  if (model.nLayer !== view.nBlocks || model.bytesPerBlock.length !== model.nLayer) {
    fail(
      `the model has ${model.nLayer} blocks and ${model.bytesPerBlock.length} block sizes but the swarm view has ` +
        `${view.nBlocks}; pass the manifest of the swarm's model`,
      {
        nLayer: model.nLayer,
        bytesPerBlock: model.bytesPerBlock.length,
        nBlocks: view.nBlocks,
      },
    )
  }
  if (!(host.msPerBlock > 0 && Number.isFinite(host.msPerBlock))) {
    fail(
      `a host's measured time per block must be a positive number of ms, got ${host.msPerBlock}; run the compute ` +
        `benchmark first`,
      {
        msPerBlock: host.msPerBlock,
      },
    )
  }
  if (!(options.kvBudgetTokens >= 0 && Number.isFinite(options.kvBudgetTokens))) {
    fail(`the KV budget must be 0 or more tokens, got ${options.kvBudgetTokens}`, {
      kvBudgetTokens: options.kvBudgetTokens,
    })
  }
  const sessions = options.kvBudgetSessions ?? 1
  if (!(Number.isInteger(sessions) && sessions >= 1))
    fail(`the KV budget's sessions must be a whole number of at least 1, got ${sessions}`, { sessions })
  if (model.seams !== undefined && model.seams.length !== model.nLayer - 1) {
    fail(`the model has ${model.nLayer} blocks and ${model.seams.length} seams; pass a manifest that parses`, {
      nLayer: model.nLayer,
      seams: model.seams.length,
    })
  }
  if (model.cachePerBlock !== undefined && model.cachePerBlock.length !== model.nLayer) {
    fail(
      `the model has ${model.nLayer} blocks and ${model.cachePerBlock.length} block caches; pass a manifest that ` +
        `parses`,
      {
        nLayer: model.nLayer,
        cachePerBlock: model.cachePerBlock.length,
      },
    )
  }
}
