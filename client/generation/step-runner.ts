import { forwardFrame, type HopInput, type StepSigning } from '../../dataplane/hop-frames'
import { FLAG_VERIFY, type Receipt, type SampledToken } from '../../protocol'
import type { HopState } from '../open-hops'

/** Where a step stands: its number, its first position, the token ids it feeds the route. */
export interface StepAt {
  readonly step: number
  readonly position: number
  readonly ids: Int32Array
  /** A speculative check (FLAG_VERIFY): the last token and drafts; the last hop answers the greedy token after each. */
  readonly verify?: boolean
}

/**
 * The way a step travels a generation's route: through the client between every two hops (client-relayed.ts), or
 * from hop to hop where they reach each other (hop-to-hop.ts). It holds the route's open hops; failover swaps them.
 */
export interface StepRunner {
  /** The route's hops, in order, each with what it was sent and signed. */
  readonly hops: HopState[]
  /**
   * Runs step `at` from hop `from` on, starting with `input`; returns the last hop's token. Each hop's checked receipt
   * is pushed to `receipts` as it comes, so the hops before a failing one still count.
   */
  run(from: number, at: StepAt, input: HopInput, receipts: Receipt[]): Promise<SampledToken>
  /** Runs on `hops` from now on: failover replaced one (and, after a liar, those after it). */
  reroute(hops: HopState[]): void
  /**
   * Before the session closes, makes `picked` hops auditable: what the client never saw (inputs and answers forwarded
   * host to host) is fetched from the hops that kept it, checked against their receipts. Client-relayed: nothing to do.
   */
  readyForAudit(picked: readonly HopState[], log: (line: string) => void): Promise<void>
  /**
   * Receipts of steps forwarded into a hop, signed by the client since the last call (off the steps' path): they join
   * the receipts the client hands in. Client-relayed: none (every step is signed as it is sent).
   */
  signedReceipts?(): Receipt[]
  /** The same, once every countersign in flight has its answer (before the session ends). */
  allSignedReceipts?(): Promise<Receipt[]>
}

/** Step `at`'s forward frame of `input` to one hop, signed by the client; a verify step flagged as one. */
export function stepForward(input: HopInput, session: string, at: StepAt, signing: StepSigning): Uint8Array {
  return forwardFrame(input, at.verify === true ? FLAG_VERIFY : 0, session, at.step, at.position, signing)
}

/** The token ids of a step as the first hop's input. */
export function tokenInput(ids: Int32Array): HopInput {
  return {
    dtype: 'i32',
    tokens: ids.length,
    width: 1,
    payload: new Uint8Array(ids.buffer, ids.byteOffset, ids.byteLength),
  }
}
