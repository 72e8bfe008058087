import { type ChainTrailer, type Frame, NeuronError, REPLAY_STEP_BASE, type SeamFacts } from '../../../protocol'
import { chainTrailer } from '../forwarding'
import { type SeamInput, seamInput } from '../seam-io'
import type { FrameCaller, ServedSession } from '../served-session'
import { checkSameInput } from './kept-answer'
import { chainSigned, clientSigned, type SignedStep } from './signed-step'
import { checkVerify } from './verify'
import { checkReplayTicket, checkStepTokens } from './within-ticket'

/** A forward frame taken as its session's next step: what compute and seal need. */
export interface AcceptedStep {
  readonly frame: Frame
  readonly served: ServedSession
  /** The frame's contents as the runtime takes them. */
  readonly input: SeamInput
  /** The input the receipt names, and the client's signature of the step (absent on a step forwarded in). */
  readonly signed: SignedStep
  /** The hop-to-hop trailer of a step forwarded in from the predecessor hop; undefined when its client sent it. */
  readonly chain: ChainTrailer | undefined
  /** The session's latest step again, with the same input (a failover's retry): its answer is the one it had. */
  readonly again: boolean
}

/** What accepting a step needs of its server. */
export interface StepGate {
  /** The session `id` if `caller` opened it; throws `not_your_session` when another caller did. */
  owned(id: string, caller: FrameCaller): ServedSession | undefined
  /** The session `id`, whoever opened it. */
  session(id: string): ServedSession | undefined
  /** The manifest's seams: what a frame carries into a session's first block. */
  readonly seams: SeamFacts
  /** Whether the runtime rolls a session back past a verify step's rejected drafts. */
  readonly rollsBackDrafts: boolean
  /** The oldest forwarded-in step of the session whose countersign its client owes a step late (forwarding.ts). */
  owedCountersign(session: string, step: number): number | undefined
}

/**
 * Takes a forward frame as the next step of its session, or throws the typed refusal of the first check it fails, all
 * before any work. The order is the wire's (a client sees the first refusal's code):
 * 1. the session is open here and the caller's; a step forwarded in from the predecessor hop may step any session,
 *    its capability (checked at 6) standing for the owner;
 * 2. the frame carries what the session's first block takes (the seam's shape), and at least one token;
 * 3. its tokens are what the ticket paid for (the prompt at step 1 or a turn's first step, one token after, a verify
 *    step's drafts);
 * 4. a verify step is one this session can take;
 * 5. replay numbering comes only on a failover ticket, inside the positions it names;
 * 6. the client signed it, or the chain of receipts proves the client signed it at the route's first hop;
 * 7. the client owes no countersign of a step forwarded in two steps ago or earlier (hop-to-hop: it signs each
 *    off the critical path, and a hop stops serving a session whose signatures lag, so none runs unpaid for long);
 * 8. it comes in order: taken, it is the session's latest step; the latest step, once served, comes again only with
 *    the same input (a failover's retry: a step number is served once).
 */
export function acceptStep(frame: Frame, caller: FrameCaller, gate: StepGate): AcceptedStep {
  const chain = chainTrailer(frame)
  const served = chain === undefined ? gate.owned(frame.session, caller) : gate.session(frame.session)
  if (served === undefined)
    throw new NeuronError(
      'unknown_session',
      `no open session ${frame.session} on this host; open it first (it may have idled out).`,
      { session: frame.session },
    )
  const input = seamInput(frame, gate.seams, served.runtime.blocks[0], served.runtime.takesTokens)
  if (frame.tokens === 0) throw new NeuronError('bad_frame', 'a forward frame carries at least one token.')
  checkStepTokens(served.ticket, frame.step, frame.tokens, frame.flags, frame.position)
  checkVerify(frame, gate.rollsBackDrafts, served.sampling)
  checkReplayTicket(served.ticket, frame.step, frame.position, frame.tokens)
  const signed = chain === undefined ? clientSigned(served, frame) : chainSigned(served, frame, chain)
  // a failover's replay rebuilds a cache with steps of their own numbering: no countersign is owed before those
  const owed = frame.step < REPLAY_STEP_BASE ? gate.owedCountersign(frame.session, frame.step) : undefined
  if (owed !== undefined)
    throw new NeuronError(
      'countersign_owed',
      `session ${frame.session} owes its client's countersign of step ${owed}, forwarded in and served; sign it (a ` +
        `sign frame) before step ${frame.step}.`,
      { owed, step: frame.step },
    )
  const again = served.order.take(frame.step, frame.position, frame.tokens, frame.flags, served.ticket.turn)
  if (again) checkSameInput(served, frame, signed.input)
  return { frame, served, input, signed, chain, again }
}
