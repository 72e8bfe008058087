// Protocol-level peers for tests that need a tracker to see hosts without running one: a hardware
// profile and a ready serving state, as a host would say them in host.hello.
import type { BlockRange, HardwareProfile, ServingState } from '../protocol'

export const TEST_PROFILE: HardwareProfile = {
  cpu: { model: 'test cpu', cores: 2, physicalCores: 2, flags: [] },
  memory: { totalBytes: 8e9, availableBytes: 4e9 },
  gpus: [],
  disk: { path: '/tmp', freeBytes: 50e9, readBytesPerSecond: 1e9 },
  memoryBytesPerSecond: 10e9,
  threads: 1,
}

/** A host ready to serve `blocks` of `modelId` at a (never reached) data-plane endpoint. */
export function readyState(modelId: string, blocks: BlockRange): ServingState {
  return {
    modelId,
    blocks,
    status: 'ready',
    progress: 1,
    kvCapacityTokens: 4096,
    activeSessions: 0,
    maxSessions: 4,
    msPerBlock: 1,
    endpoint: 'ws://127.0.0.1:1/',
  }
}
