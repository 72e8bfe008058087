// The last hop's audit: its answer is a token drawn from its logits with the session's sampling, which every receipt
// of it commits to (protocol/commitment.ts samplingCommitment). A draw depends on the logits, the sampling and the
// position alone (host/serving/last-hop-sampler.ts), so another host of the span re-runs the steps with the same
// sampling and must draw the same token; a greedy pick may differ only on a near-tie, which its log-probabilities show.
import type { HopInput } from '../../dataplane/hop-frames'
import type { SpanAnswer } from '../../dataplane/span-runner'
import { payloadSha256 } from '../../identity/tickets'
import {
  type AuditRequest,
  GREEDY_TIE_NATS,
  MAX_TOP_LOGPROBS,
  NeuronError,
  readJson,
  SampledToken,
  SamplingParams,
  samplingCommitment,
} from '../../protocol'

/** How an audit re-runs a hop's steps and compares what it finds with the hop's answer. */
export interface Judge<R> {
  /** The re-run of the hop's steps on `hostId`; undefined when it could not be asked or answered nothing usable. */
  run(hostId: string): Promise<R | undefined>
  /** How far the audited answer is from a re-run, as a multiple of the tolerance (at most 1: they agree). */
  claimed(rerun: R): number
  /** How far two re-runs are from each other, likewise. */
  runs(x: R, y: R): number
  /** What the audit compares, for its verdict: "all 12 steps", "step 12's token". */
  readonly checked: string
  /**
   * Whether a host's own re-run disagreeing with its answer proves a lie (a ban). Not for a sampled draw: the seams'
   * rounding can move a draw that falls at the edge between two tokens, so there it counts as a failed audit alone.
   */
  readonly proves: boolean
}

/** Re-runs a hop's steps on a host with the last hop's sampling, as the Prober does (Prober.rerun). */
export type SampledRerun = (hostId: string, steps: HopInput[], sampling: SamplingParams) => Promise<SpanAnswer[]>

/**
 * The judge of a last hop's steps, or why they are left to known-answer probes: a client that handed in no sampling,
 * a session whose draws depend on its earlier tokens (penalties, a grammar), a verify step's answer. Throws when the
 * sampling handed in is not the one the host signed.
 */
export function headJudge(
  request: AuditRequest,
  steps: HopInput[],
  rerun: SampledRerun,
): Judge<SampledToken> | { readonly unchecked: string } {
  if (request.sampling === undefined) return { unchecked: 'the client handed in no sampling' }
  const params = SamplingParams.parse(request.sampling)
  if (request.steps.at(-1)?.receipt.commit !== payloadSha256(samplingCommitment(params)))
    throw new NeuronError(
      'bad_request',
      `the sampling handed in is not the one host ${request.hostId} signed it draws with; send the session's own.`,
    )
  if (
    params.grammar !== undefined ||
    (params.presencePenalty ?? 0) !== 0 ||
    (params.frequencyPenalty ?? 0) !== 0 ||
    (params.repeatPenalty ?? 1) !== 1
  )
    return { unchecked: 'its draws depend on the tokens before (a grammar or penalties)' }
  const claimed = SampledToken.safeParse(jsonOf(request.output))
  if (!claimed.success) return { unchecked: 'its answer is not a token' }
  if (claimed.data.verified !== undefined) return { unchecked: 'its last step is a verify step' }
  const greedy = params.temperature === 0
  return {
    async run(hostId) {
      try {
        const answers = await rerun(hostId, steps, { ...params, topLogprobs: MAX_TOP_LOGPROBS })
        const last = answers.at(-1)?.frame
        return last?.kind === 'token' ? readJson(last, SampledToken) : undefined
      } catch {
        return undefined
      }
    },
    claimed: (rerun) => tokenDistance(claimed.data, rerun, greedy),
    runs: (x, y) => Math.max(tokenDistance(x, y, greedy), tokenDistance(y, x, greedy)),
    checked: `step ${steps.length}'s token`,
    proves: greedy,
  }
}

/**
 * How far `token` is from `rerun`'s draw, as a multiple of GREEDY_TIE_NATS: 0 when they are the same token; for a
 * greedy pick, how much less likely the re-run finds it than its own (a near-tie is within 1); otherwise beyond
 * measure (a sampled draw of another token, or a token outside the re-run's most likely).
 */
export function tokenDistance(token: SampledToken, rerun: SampledToken, greedy: boolean): number {
  if (token.token === rerun.token) return 0
  const likely = rerun.top?.find((t) => t.token === token.token)
  if (!greedy || likely === undefined) return Number.POSITIVE_INFINITY
  return Math.max(0, rerun.logprob - likely.logprob) / GREEDY_TIE_NATS
}

function jsonOf(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes))
  } catch {
    return undefined
  }
}
