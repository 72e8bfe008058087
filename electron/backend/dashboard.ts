import { z } from 'zod'
import { nodeAuthHeaders } from '../../dataplane/tracker-connection'
import type { NodeIdentity } from '../../identity/keys'
import {
  DASHBOARD_SCOPE,
  describeIssues,
  type Earnings,
  HostChecksView,
  NeuronError,
  type ReputationView,
} from '../../protocol'

const Count = z.number().int().nonnegative()
const Bucket = z.object({
  start: z.number(),
  modelId: z.string(),
  earned: z.number().int(),
  blockTokens: Count,
  receipts: Count,
})
const Unit = z.number().min(0).max(1)

/** The tracker gateway's GET /v1/dashboard/hosts/<hostId> (tracker/gateway/dashboards.ts), the parts the app shows. */
export const HostDashboard = z.object({
  host_id: z.string(),
  /** Settled earnings; pending ones wait in escrow (a tracker without escrow sends neither of the next two). */
  balance_micro: z.number().int(),
  pending_micro: z.number().int().default(0),
  settlement_window_ms: Count.optional(),
  served_block_tokens: Count,
  earnings_by_hour: z.array(Bucket),
  earnings_by_day: z.array(Bucket),
  recent_receipts: z.array(
    z.object({
      receipt: z.object({ session: z.string(), step: Count, blocks: z.tuple([Count, Count]), tokens: Count }),
      modelId: z.string(),
      hostEarned: z.number().int(),
      createdAt: z.number(),
      /** Paid by the host's own account: its app's chat through itself, free (a tracker older than that omits it). */
      local: z.boolean().default(false),
    }),
  ),
  reputation: z.object({
    score: Unit,
    components: z.object({ uptime: Unit, completion: Unit, latency: Unit, audits: Unit }),
    completedSteps: Count,
    failedSteps: Count,
  }),
  reputation_history: z.array(z.object({ at: z.number(), score: z.number() })),
  /** The tracker's fraud checks of the host; absent from a tracker older than them. */
  checks: HostChecksView.nullable().optional(),
})
export type HostDashboard = z.infer<typeof HostDashboard>

/**
 * Fetches a host's dashboard over HTTP, so a remote tracker works like the embedded one. The request
 * carries the app's key, signed: a private swarm shows its dashboards to its members only.
 */
export async function fetchHostDashboard(
  trackerUrl: string,
  hostId: string,
  identity: NodeIdentity,
  timeoutMs = 5000,
): Promise<HostDashboard> {
  const url = `${trackerUrl}/v1/dashboard/hosts/${hostId}`
  let body: unknown
  let refusal: NeuronError | undefined
  try {
    const headers = await nodeAuthHeaders(trackerUrl, identity, DASHBOARD_SCOPE, { timeoutMs })
    const res = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) })
    body = await res.json()
    const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error
    if (!res.ok)
      refusal = new NeuronError(
        String(error?.code ?? 'bad_response'),
        `the tracker's dashboard at ${url} refused: ${String(error?.message ?? `HTTP ${res.status}`)}`,
      )
  } catch (error) {
    throw new NeuronError(
      'tracker_unreachable',
      `the tracker's dashboard at ${url} did not answer (${error instanceof Error ? error.message : error}); is ` +
        `the tracker running?`,
    )
  }
  if (refusal !== undefined) throw refusal
  return parseHostDashboard(url, body)
}

/**
 * The dashboard `url` answered, parsed; anything malformed (a field, the checks) is a bad_response naming the field.
 */
export function parseHostDashboard(url: string, body: unknown): HostDashboard {
  const parsed = HostDashboard.safeParse(body)
  if (!parsed.success) throw new NeuronError('bad_response', describeIssues(url, parsed.error))
  return parsed.data
}

export function toEarnings(hostId: string, d: HostDashboard, account: Earnings['account']): Earnings {
  const point = (b: z.infer<typeof Bucket>) => ({
    start: b.start,
    modelId: b.modelId,
    earnedMicro: b.earned,
    blockTokens: b.blockTokens,
    receipts: b.receipts,
  })
  return {
    hostId,
    balanceMicro: d.balance_micro,
    pendingMicro: d.pending_micro,
    settlementWindowMs: d.settlement_window_ms ?? null,
    servedBlockTokens: d.served_block_tokens,
    byHour: d.earnings_by_hour.map(point),
    byDay: d.earnings_by_day.map(point),
    recent: d.recent_receipts
      .filter((r) => r.receipt.blocks[0] < r.receipt.blocks[1])
      .map((r) => ({
        at: r.createdAt,
        session: r.receipt.session,
        step: r.receipt.step,
        modelId: r.modelId,
        blocks: r.receipt.blocks,
        tokens: r.receipt.tokens,
        earnedMicro: r.hostEarned,
        local: r.local,
      })),
    account,
  }
}

export function toReputation(hostId: string, d: HostDashboard): ReputationView {
  return {
    hostId,
    score: d.reputation.score,
    components: d.reputation.components,
    completedSteps: d.reputation.completedSteps,
    failedSteps: d.reputation.failedSteps,
    // The tracker lists newest first; charts read oldest first.
    history: [...d.reputation_history].reverse().map((h) => ({ at: h.at, score: h.score })),
    checks: d.checks ?? null,
  }
}
