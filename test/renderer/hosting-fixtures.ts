import type { HostingPreview, HostingStatus } from '../../protocol/app'
import type { ModelSummary } from '../../protocol/swarm'

export const tinyModel: ModelSummary = {
  modelId: 'stories260k',
  name: 'Stories 260K',
  architecture: 'llama',
  nLayer: 6,
  bytes: 1_200_000,
  infoHash: 'a'.repeat(40),
  coverage: [2, 2, 1, 0, 0, 0],
}

const option = {
  bytesToDownload: 600_000,
  memoryBytes: 900_000,
  cacheBytes: 300_000,
  cacheBytesPerToken: 3_000,
  expectedTokensPerSecond: 40,
  swarmTokensPerSecond: 25,
  bestRouteMsPerToken: 40,
}

/** The tracker proposes the uncovered blocks [3, 6) and offers [2, 4) as an alternative. */
export const tinyPreview: HostingPreview = {
  placement: {
    modelId: 'stories260k',
    proposal: { blocks: [3, 6], ...option },
    refusal: null,
    swarmTokensPerSecond: 0,
    coverage: tinyModel.coverage.map((hosts, block) => ({
      block,
      before: { hosts, tokensPerSecond: hosts * 10 },
      after: { hosts: block >= 3 ? hosts + 1 : hosts, tokensPerSecond: 25 },
    })),
    alternatives: [{ blocks: [2, 4], ...option, why: 'strengthens the weakest served block' }],
  },
  creditsPerHourMicro: 3_000_000,
}

export const downloading: HostingStatus = {
  phase: 'downloading',
  modelId: 'stories260k',
  blocks: [3, 6],
  artifacts: [
    {
      file: 'blk-03-06.gguf',
      downloadedBytes: 300_000,
      totalBytes: 600_000,
      bytesPerSecond: 100_000,
      peers: 2,
      etaSeconds: 3,
    },
  ],
  serving: null,
  error: null,
}

export const serving: HostingStatus = {
  ...downloading,
  phase: 'serving',
  artifacts: [],
  serving: {
    activeSessions: 1,
    maxSessions: 4,
    tokensPerSecond: 38,
    servedBlockTokens: 1200,
    startedAt: 1_000_000,
    endpoint: 'ws://192.168.1.5:7071',
  },
}
