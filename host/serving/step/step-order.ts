import { FLAG_NO_SAMPLE, FLAG_VERIFY, NeuronError, REPLAY_STEP_BASE } from '../../../protocol'

interface StepAt {
  readonly step: number
  readonly position: number
  readonly tokens: number
  /** A verify step: the next may start at any of its positions after the first (the drafts that matched). */
  readonly verify?: boolean
}

/**
 * The order a session's steps must come in: step 1 at position 0, then each step the next number at the next
 * position; the last step may come again at its own position (a failover's retry: once served, only with the same
 * input, and answered as it was without a second pass: step/kept-answer.ts). Replays
 * (numbers from REPLAY_STEP_BASE) rebuild the cache from position 0, one after another, and never sample; a step
 * after them continues where they ended. After a verify step (FLAG_VERIFY) the next step starts anywhere from its
 * second position to just after its last, rolling the cache back past the drafts that did not match. Anything else is
 * the client's doing and refused as such, before any work.
 */
export class StepOrder {
  private last: StepAt | undefined
  /** The replay run in progress: the next replay step and position; the next plain step continues at its position. */
  private replay: { step: number; position: number } | undefined

  /** `start`: where step 1 runs (a session started from another's cache, its first positions copied: a fork). */
  constructor(private readonly start = 0) {}

  /**
   * Throws `step_out_of_order` or `replay_samples` when the step may not come now; else takes it as the latest. True
   * when it is the latest step again (a retry).
   */
  take(
    step: number,
    position: number,
    tokens: number,
    flags: number,
    /** The session's turn (its ticket's): its first step may start back at the turn's position (rolled back to). */
    turn?: { readonly step: number; readonly position: number },
  ): boolean {
    if (step >= REPLAY_STEP_BASE) {
      this.takeReplay(step, position, tokens, flags)
      return false
    }
    const last = this.last
    if (last !== undefined && this.replay === undefined && step === last.step && position === last.position) return true
    const expected = this.expected()
    if (
      turn !== undefined &&
      step === turn.step &&
      position === turn.position &&
      expected.steps(step) &&
      position <= expected.position
    ) {
      this.last = { step, position, tokens }
      this.replay = undefined
      return false
    }
    if (!expected.positions(position) || !expected.steps(step)) {
      throw new NeuronError(
        'step_out_of_order',
        `step ${step} at position ${position} is out of order: this session takes ${expected.says} next. Send a ` +
          `session's steps in order.`,
        { step, position, expectedPosition: expected.position },
      )
    }
    this.last = { step, position, tokens, verify: (flags & FLAG_VERIFY) !== 0 }
    this.replay = undefined
    return false
  }

  /** The position the next step starts at (a turn may start back from it, never past it). */
  get next(): number {
    return this.expected().position
  }

  private expected(): {
    position: number
    positions: (p: number) => boolean
    steps: (step: number) => boolean
    says: string
  } {
    const { last, replay } = this
    // after a rebuild the step in flight comes again: the next number, or the one the rebuild interrupted
    if (replay !== undefined) {
      const from = last?.step ?? 1
      const at = (p: number) => p === replay.position
      return {
        position: replay.position,
        positions: at,
        steps: (s) => s >= from,
        says: `step ${from} or later at position ${replay.position}`,
      }
    }
    if (last === undefined) {
      const start = this.start
      return {
        position: start,
        positions: (p) => p === start,
        steps: (s) => s === 1,
        says: `step 1 at position ${start}`,
      }
    }
    const position = last.position + last.tokens
    const steps = (s: number) => s === last.step + 1
    if (last.verify === true && last.tokens > 1) {
      const says = `step ${last.step + 1} at a position from ${last.position + 1} to ${position}`
      return { position, positions: (p) => p > last.position && p <= position, steps, says }
    }
    return { position, positions: (p) => p === position, steps, says: `step ${last.step + 1} at position ${position}` }
  }

  private takeReplay(step: number, position: number, tokens: number, flags: number): void {
    if ((flags & FLAG_NO_SAMPLE) === 0)
      throw new NeuronError(
        'replay_samples',
        `replay step ${step} asks for a token; a replay only rebuilds the cache (no-sample flag).`,
        { step },
      )
    const run = this.replay
    const continues = run !== undefined && step === run.step && position === run.position
    if (!continues && position !== 0)
      throw new NeuronError(
        'step_out_of_order',
        `replay step ${step} at position ${position} is out of order: a rebuild starts at position 0 and goes on ` +
          `in order.`,
        {
          step,
          position,
        },
      )
    this.replay = { step: step + 1, position: position + tokens }
  }
}
