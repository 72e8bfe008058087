import { z } from 'zod'
import { BlockRange } from './blocks'
import { HostChecksView } from './checks'
import { NodeId } from './identity'
import { Count } from './manifest'
import { rpc } from './rpc'

// What this computer's hosting earned and how the tracker rates it: the Earnings and Reputation screens' part of the
// app's contract (protocol/app.ts).

const Micro = z.number().int()
const Empty = z.object({}).strict()

export const EarningsPoint = z.object({
  start: z.number(),
  modelId: z.string(),
  earnedMicro: Micro,
  blockTokens: Count,
  receipts: Count,
})
export const RecentReceipt = z.object({
  at: z.number(),
  session: z.string(),
  step: Count,
  modelId: z.string(),
  blocks: BlockRange,
  tokens: Count,
  earnedMicro: Micro,
  /** This computer's own chat through its own host: local use, neither paid nor earned. */
  local: z.boolean(),
})
export const Earnings = z.object({
  hostId: NodeId,
  /** Settled earnings: spendable. */
  balanceMicro: Micro,
  /**
   * Earnings still pending in escrow: settled once the settlement window passes, voided if the host is caught cheating.
   */
  pendingMicro: Micro,
  /** How long earnings stay pending, ms; null from a tracker that does not say (one without escrow). */
  settlementWindowMs: Count.nullable(),
  servedBlockTokens: Count,
  byHour: z.array(EarningsPoint),
  byDay: z.array(EarningsPoint),
  recent: z.array(RecentReceipt),
  /**
   * The app's own consumer account (what chat spends); null while unknown. A remote tracker tells only
   * its balance (in the pushes that follow the app's paid answers), so accountId is null there.
   */
  account: z.object({ accountId: z.string().nullable(), balanceMicro: Micro }).nullable(),
})
export type Earnings = z.infer<typeof Earnings>

export const ReputationComponents = z.object({
  uptime: z.number().min(0).max(1),
  completion: z.number().min(0).max(1),
  latency: z.number().min(0).max(1),
  audits: z.number().min(0).max(1),
})
export const ReputationView = z.object({
  hostId: NodeId,
  score: z.number().min(0).max(1),
  components: ReputationComponents,
  completedSteps: Count,
  failedSteps: Count,
  history: z.array(z.object({ at: z.number(), score: z.number() })),
  /** The tracker's fraud checks of this host (probes, audits, probation, a ban); null from a tracker without them. */
  checks: HostChecksView.nullable(),
})
export type ReputationView = z.infer<typeof ReputationView>

/** earnings.* and reputation.*: this computer's host as its tracker's ledger and checks see it. */
export const EarningsMethods = {
  'earnings.get': rpc(Empty, Earnings),
  'reputation.get': rpc(Empty, ReputationView),
} as const
