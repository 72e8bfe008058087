import type { TrackerChannel } from '../../dataplane/tracker-link'
import {
  ClientToTracker,
  callRpc,
  MAX_DRAFT_TOKENS,
  NeuronError,
  type SampledToken,
  type SamplingParams,
  UNROLLABLE_ARCHS,
} from '../../protocol'
import type { ModelTokenizer } from '../../text/tokenizer'
import type { HopState } from '../open-hops'
import { keptRowsOf } from '../step-audits'
import { DraftModel } from './draft-model'
import { firstRowsOf } from './hop-to-hop'
import type { DraftRequest, SpeculationStats } from './request'
import type { StepAt } from './step-runner'

// Speculative decoding on the client: the draft proposes k tokens, one verify step runs the last token and the k drafts
// through the route (k + 1 positions), and the last hop answers the greedy token after each position. The longest
// prefix of drafts that match is accepted, plus the route's own token after it; the next step starts right there, so
// every hop rolls its cache back past the drafts that did not match. Greedy only: exact matching gives the route's
// own greedy tokens whatever the draft proposes.

/** Drafted tokens per verify step unless the request says. */
export const DEFAULT_DRAFT_K = 4

/** Refuses speculation before any route is planned: `k` out of range, sampling, or a family that cannot roll back. */
export function checkSpeculation(
  draft: DraftRequest,
  sampling: SamplingParams | undefined,
  architecture: string,
): number {
  const k = draft.k ?? DEFAULT_DRAFT_K
  if (!Number.isInteger(k) || k < 1 || k > MAX_DRAFT_TOKENS)
    throw new NeuronError('bad_request', `a draft proposes 1 to ${MAX_DRAFT_TOKENS} tokens per step, not ${k}.`)
  const s = sampling
  if (
    (s?.temperature ?? 0) > 0 ||
    (s?.repeatPenalty ?? 1) !== 1 ||
    s?.presencePenalty ||
    s?.frequencyPenalty ||
    s?.grammar !== undefined ||
    s?.topLogprobs
  )
    throw new NeuronError(
      'speculation_greedy_only',
      'speculation is greedy-only for now: drafts are checked by exact match (temperature 0, no penalties, grammar ' +
        'or top log-probabilities); generate without a draft to sample.',
    )
  if (UNROLLABLE_ARCHS.has(architecture))
    throw new NeuronError(
      'speculation_unsupported',
      `${architecture} blocks keep recurrent or compressor state that a rejected draft would corrupt (no per-step ` +
        `checkpoints yet); generate without a draft.`,
      { architecture },
    )
  return k
}

/** What the speculative loop needs of the generation: run a step (failing over as any step does), the hops to trim. */
export interface SpeculativeRoute {
  readonly prompt: readonly number[]
  /** Tokens to generate at most. */
  readonly maxNew: number
  readonly k: number
  readonly draft: DraftModel
  /** Whether an end-of-generation token (the tokenizer's) ends the generation. */
  readonly stopAtEog: boolean
  readonly tokenizer: Pick<ModelTokenizer, 'isEndOfGeneration'>
  /** Runs a step through the route, whichever way its steps travel, failing over hops that fail. */
  readonly step: (at: StepAt) => Promise<SampledToken>
  readonly hops: () => readonly HopState[]
  readonly stats: SpeculationStats
  readonly signal?: AbortSignal | undefined
}

/**
 * The generated tokens, one pseudo-step each ({position, ids} so that position + ids.length is the token's own
 * position): the prefill's, then those of verify steps. The hops' recorded inputs keep only the accepted rows, so a
 * failover replays exactly the positions the route holds.
 */
export async function* speculativeTokens(
  r: SpeculativeRoute,
): AsyncGenerator<StepAt & { sampled: SampledToken }, void> {
  const ends = (t: number) => r.stopAtEog && r.tokenizer.isEndOfGeneration(t)
  const confirmed = [...r.prompt]
  const prefill: StepAt = { step: 1, position: 0, ids: Int32Array.from(r.prompt) }
  const first = await r.step(prefill)
  yield { ...prefill, sampled: first }
  confirmed.push(first.token)
  let made = 1
  let step = 2
  while (made < r.maxNew && !ends(confirmed.at(-1) as number) && r.signal?.aborted !== true) {
    // the step's positions stay within the tokens routed, and it never checks past what may still be generated
    const k = Math.min(r.k, r.maxNew - made - 1)
    const drafts = await r.draft.propose(confirmed, k)
    const position = confirmed.length - 1
    const at: StepAt = {
      step: step++,
      position,
      ids: Int32Array.from([confirmed.at(-1) as number, ...drafts]),
      verify: true,
    }
    const answer = await r.step(at)
    const verified = answer.verified
    if (verified === undefined || verified.length !== at.ids.length)
      throw new NeuronError(
        'bad_frame',
        `the last hop answered a verify step of ${at.ids.length} positions with ${verified?.length ?? 0} tokens.`,
      )
    let accepted = 0
    while (accepted < drafts.length && drafts[accepted] === verified[accepted]?.token) accepted++
    r.stats.verifySteps++
    r.stats.drafted += drafts.length
    r.stats.accepted += accepted
    for (const h of r.hops()) trimLast(h, accepted + 1)
    for (let j = 0; j <= accepted; j++) {
      const v = verified[j] as { token: number; logprob: number }
      yield {
        step: at.step,
        position: position + j,
        ids: Int32Array.of(at.ids[j] as number),
        sampled: { token: v.token, logprob: v.logprob, computeMs: 0 },
      }
      confirmed.push(v.token)
      made++
      if (made >= r.maxNew || ends(v.token)) return
    }
  }
}

/** Cuts a hop's last recorded input to its first `rows` rows: the positions the route keeps after a verify step. */
function trimLast(h: HopState, rows: number): void {
  const last = h.inputs.at(-1)
  if (last !== undefined) h.inputs[h.inputs.length - 1] = keptRowsOf(firstRowsOf(last, rows), last)
}

/**
 * The draft a request asks for, loaded and checked against the
 * route model (its family and tokenizer); undefined without one.
 */
export async function openDraft(
  request: {
    readonly modelId: string
    readonly draft?: DraftRequest | undefined
    readonly sampling?: SamplingParams | undefined
  },
  tracker: TrackerChannel,
  tokenizer: ModelTokenizer,
  positions: number,
): Promise<{ draft: DraftModel; k: number; stats: SpeculationStats } | undefined> {
  if (request.draft === undefined) return undefined
  const { manifest } = await callRpc(tracker, ClientToTracker, 'model.get', { modelId: request.modelId })
  const k = checkSpeculation(request.draft, request.sampling, manifest.architecture)
  return {
    draft: await DraftModel.load(request.draft.path, tokenizer.tokenTexts, positions + k),
    k,
    stats: { verifySteps: 0, drafted: 0, accepted: 0 },
  }
}
