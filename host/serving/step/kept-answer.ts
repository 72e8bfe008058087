import { type Frame, NeuronError } from '../../../protocol'
import type { ServedSession } from '../served-session'

/** What the retry of a step is told by: its session, its frame, whether it is the latest step again, its input. */
interface Step {
  readonly served: ServedSession
  readonly frame: Frame
  readonly again: boolean
  readonly signed: { readonly input: string }
}

/** The largest answer a session keeps for a retry of its latest step: a decode step's, not a long prefill's. */
export const KEPT_ANSWER_BYTES = 1 << 20

/**
 * A retry of the latest step once it was served must carry the input it was served with (its sha256, as signed):
 * `step_rerun_changed` else, before any work. A step that was not served (its pass failed) may come with another.
 */
export function checkSameInput(served: ServedSession, frame: Frame, input: string): void {
  const kept = served.kept
  if (kept?.step === frame.step && kept.input !== input)
    throw new NeuronError(
      'step_rerun_changed',
      `step ${frame.step} at position ${frame.position} was served with another input: a step number is served once, ` +
        `and comes again only as it was (a retry). Send the next step, or open a new session.`,
      { step: frame.step, position: frame.position },
    )
}

/**
 * A retry of the session's latest step (same number, position and input: a failover's) answered as it was, with no
 * second pass; undefined when the step must run: its first time, or the one second pass of an answer too large to
 * keep. A third coming of such a step is refused: a step number is served once.
 */
export function keptAnswer({ served, frame, again }: Step): Uint8Array | undefined {
  const kept = served.kept
  if (!again || kept?.step !== frame.step) return undefined
  if (kept.answer !== undefined) return kept.answer
  if (kept.recomputed)
    throw new NeuronError(
      'step_served',
      `step ${frame.step} was served and retried already; a step number is served once. Send the next step, or ` +
        `open a new session.`,
      { step: frame.step },
    )
  kept.recomputed = true
  return undefined
}

/** Keeps a step's sealed answer for a retry (a retry's own answer changes nothing); returns it. */
export function keep({ served, frame, again, signed }: Step, answer: Uint8Array): Uint8Array {
  if (!again || served.kept?.step !== frame.step) {
    const small = answer.byteLength <= KEPT_ANSWER_BYTES
    served.kept = { step: frame.step, input: signed.input, answer: small ? answer : undefined, recomputed: false }
  }
  return answer
}
