import type { Earnings } from '../../protocol/app'

const HOUR = 3_600_000
const DAY = 24 * HOUR

export const someEarnings: Earnings = {
  hostId: '0123456789abcdef0123',
  balanceMicro: 4_250,
  pendingMicro: 1_500,
  settlementWindowMs: DAY,
  servedBlockTokens: 5_400,
  byHour: [
    { start: 2 * HOUR, modelId: 'stories260k', earnedMicro: 1_000, blockTokens: 1_000, receipts: 3 },
    { start: HOUR, modelId: 'stories260k', earnedMicro: 2_000, blockTokens: 2_000, receipts: 5 },
    { start: 2 * HOUR, modelId: 'llama-70b', earnedMicro: 1_250, blockTokens: 2_400, receipts: 2 },
  ],
  byDay: [
    { start: 0, modelId: 'stories260k', earnedMicro: 3_000, blockTokens: 3_000, receipts: 8 },
    { start: DAY, modelId: 'llama-70b', earnedMicro: 1_250, blockTokens: 2_400, receipts: 2 },
  ],
  recent: [
    {
      at: 2 * HOUR + 5,
      session: 'f'.repeat(32),
      step: 4,
      modelId: 'llama-70b',
      blocks: [0, 8],
      tokens: 300,
      earnedMicro: 1_250,
      local: false,
    },
  ],
  account: { accountId: 'acct-1', balanceMicro: 9_000_000 },
}
