import { FLAG_VERIFY, MAX_DRAFT_TOKENS, NeuronError, REPLAY_STEP_BASE, type Ticket } from '../../../protocol'

// What a step may be on its session's ticket, checked before any work: the tokens the ticket paid for, and replay
// numbering only on a failover ticket (the ticket that says who pays for the replay).

/**
 * A step carries what its ticket paid for: the declared prompt at step 1, or at a conversation's turn (the ticket's
 * `turn`) its prompt at its first step and position; one token after (replays rebuild a cache, unpaid by the client).
 */
export function checkStepTokens(
  ticket: Pick<Ticket, 'promptTokens' | 'turn'>,
  step: number,
  tokens: number,
  flags = 0,
  position?: number,
): void {
  const turn = ticket.turn?.step === step ? ticket.turn : undefined
  if (turn !== undefined && position !== undefined && position !== turn.position)
    throw new NeuronError(
      'tokens_not_ticketed',
      `step ${step} starts a turn at position ${turn.position} on this ticket, not at ${position}.`,
      { position: turn.position },
    )
  // a verify step (speculative decoding) checks the last token and its drafts: each position is paid as one token
  const allowed =
    step === 1 ? ticket.promptTokens : turn !== undefined ? turn.tokens : flags & FLAG_VERIFY ? MAX_DRAFT_TOKENS + 1 : 1
  if (step < REPLAY_STEP_BASE && tokens > allowed)
    throw new NeuronError(
      'tokens_not_ticketed',
      `step ${step} may carry ${allowed} tokens on this ticket, not ${tokens}; declare the prompt in route.plan, or ` +
        `a conversation's next turn in route.turn.`,
      {
        allowed,
      },
    )
}

/**
 * Replay numbering (steps from REPLAY_STEP_BASE) runs only on a failover ticket, inside the positions it names: a
 * plain ticket's client numbering its steps as replays is refused as the client's doing, before any work.
 */
export function checkReplayTicket(
  ticket: Pick<Ticket, 'replay'>,
  step: number,
  position: number,
  tokens: number,
): void {
  if (step < REPLAY_STEP_BASE) return
  const replay = ticket.replay
  if (replay === undefined)
    throw new NeuronError(
      'replay_not_ticketed',
      `step ${step} is numbered as a failover replay, but this session's ticket is a plain one; number steps from ` +
        `1, or ask route.plan for a failover ticket (with failedHost).`,
      { step },
    )
  if (position < replay.span[0] || position + tokens > replay.span[1])
    throw new NeuronError(
      'replay_out_of_span',
      `replay step ${step} covers positions [${position}, ${position + tokens}); this failover ticket rebuilds ` +
        `[${replay.span[0]}, ${replay.span[1]}) only.`,
      { step, span: replay.span },
    )
}
