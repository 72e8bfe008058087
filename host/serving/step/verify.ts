import type { ForwardOutput } from '../../../native'
import { FLAG_VERIFY, type Frame, MAX_DRAFT_TOKENS, NeuronError, type SampledToken } from '../../../protocol'
import type { LastHopSampler } from '../last-hop-sampler'

// Speculative decoding at a host: a verify step (FLAG_VERIFY) runs the last token and the client's drafted ones in one
// pass; the last hop answers the greedy token after every position. The client's next step starts where the drafts
// stopped matching, and every hop's cache rolls back there (ShardSession.forward at a position before nPast).

/** Whether a forward frame is a verify step. */
export function isVerify(frame: Pick<Frame, 'flags'>): boolean {
  return (frame.flags & FLAG_VERIFY) !== 0
}

/**
 * Refuses a verify step this session cannot take, before any work: the first step (the prompt is not drafted), more
 * positions than MAX_DRAFT_TOKENS + 1, a family whose per-session state cannot roll back (`rollsBackDrafts` false:
 * recurrent or compressor blocks), or, at the last hop, sampling other than plain greedy.
 */
export function checkVerify(
  frame: Pick<Frame, 'flags' | 'step' | 'tokens'>,
  rollsBackDrafts: boolean,
  sampling: LastHopSampler | undefined,
): void {
  if (!isVerify(frame)) return
  if (frame.step === 1)
    throw new NeuronError('bad_frame', 'step 1 carries the prompt and cannot be a verify step; draft from step 2 on.')
  if (frame.tokens > MAX_DRAFT_TOKENS + 1)
    throw new NeuronError(
      'tokens_not_ticketed',
      `a verify step checks at most ${MAX_DRAFT_TOKENS} drafted tokens, not ${frame.tokens - 1}; draft fewer.`,
      {
        allowed: MAX_DRAFT_TOKENS + 1,
      },
    )
  if (!rollsBackDrafts)
    throw new NeuronError(
      'speculation_unsupported',
      'this model family keeps recurrent or compressor state that a verify step cannot roll back; ' +
        'generate without a draft.',
    )
  if (sampling !== undefined && !isPlainGreedy(sampling)) throw greedyOnly()
}

/** The typed refusal of speculation under sampling: the rejection rule is not built yet. */
export function greedyOnly(): NeuronError {
  return new NeuronError(
    'speculation_greedy_only',
    'speculation is greedy-only for now: drafts are checked by exact match (temperature 0, no penalties, grammar ' +
      'or top log-probabilities); generate without a draft to sample.',
  )
}

function isPlainGreedy(sampling: LastHopSampler): boolean {
  const p = sampling.params
  return (
    p.temperature === 0 &&
    (p.repeatPenalty ?? 1) === 1 &&
    !p.presencePenalty &&
    !p.frequencyPenalty &&
    p.grammar === undefined &&
    !p.topLogprobs
  )
}

/** The last hop's answer to a verify step: the greedy token after each position, with its log-probability. */
export function verifiedTokens(output: Extract<ForwardOutput, { kind: 'logits' }>, computeMs: number): SampledToken {
  const verified: { token: number; logprob: number }[] = []
  for (let r = 0; r < output.rows; r++)
    verified.push(greedy(output.data.subarray(r * output.cols, (r + 1) * output.cols)))
  const first = verified[0]
  if (first === undefined) throw new NeuronError('internal', 'a verify step produced no logits')
  return { token: first.token, logprob: first.logprob, computeMs, verified }
}

/** Argmax (the lowest id on a tie, as the sampler's greedy pick) and its log-softmax. */
function greedy(logits: Float32Array): { token: number; logprob: number } {
  let best = 0
  let max = Number.NEGATIVE_INFINITY
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i] as number
    if (v > max) {
      max = v
      best = i
    }
  }
  let sum = 0
  for (let i = 0; i < logits.length; i++) sum += Math.exp((logits[i] as number) - max)
  return { token: best, logprob: -Math.log(sum) }
}
