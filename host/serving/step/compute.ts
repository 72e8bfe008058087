import { FLAG_NO_SAMPLE, FLAG_SIDE, type Frame, type SampledToken, type SeamFacts } from '../../../protocol'
import { seamSide } from '../seam-io'
import type { StepBatcher } from '../step-batcher'
import type { AcceptedStep } from './accept'
import { isVerify, verifiedTokens } from './verify'

/** Single-token steps whose compute time the measured speed is the median of. */
const RECENT_STEPS = 64

/**
 * Runs accepted steps through the runtime, batched with other sessions' (step-batcher.ts), and shapes each answer: the
 * hidden states for the next hop, or at the last hop the sampled token, a verify step's tokens, or ok (no sample).
 */
export class StepCompute {
  /** Compute time per block of the last single-token steps, for the measured speed. */
  private readonly recentMsPerBlock: number[] = []
  /** Positions run through the blocks so far, over every session (prefilled and decoded; a kept answer runs none). */
  positions = 0
  /** Of them, those of prompts: a session's first step, or a conversation turn's. */
  prefilled = 0

  constructor(
    private readonly batcher: StepBatcher,
    private readonly seams: SeamFacts,
  ) {}

  /** Median compute time per block of recent single-token steps, ms; undefined before any. */
  get msPerBlock(): number | undefined {
    if (this.recentMsPerBlock.length === 0) return undefined
    const sorted = [...this.recentMsPerBlock].sort((a, b) => a - b)
    return sorted[Math.floor(sorted.length / 2)]
  }

  /** The step's answer, not yet sealed. */
  async run({ served, frame, input }: AcceptedStep): Promise<Frame> {
    const started = performance.now()
    const output = await this.batcher.forward(served.runtime, input.values, {
      positions: frame.position,
      ...(isVerify(frame) ? { allLogits: true } : {}),
      hiddenType: served.open.hiddenDtype,
      ...(served.runtime.takesTokens || input.tokenIds === undefined ? {} : { tokenIds: input.tokenIds }),
      ...(input.indices === undefined ? {} : { indices: input.indices }),
    })
    const computeMs = performance.now() - started
    this.positions += frame.tokens
    if (frame.step === 1 || frame.step === served.ticket.turn?.step) this.prefilled += frame.tokens
    if (frame.tokens === 1) {
      const [from, to] = served.runtime.blocks
      this.recentMsPerBlock.push(computeMs / (to - from))
      if (this.recentMsPerBlock.length > RECENT_STEPS) this.recentMsPerBlock.shift()
    }
    if (output.kind === 'logits') {
      if (frame.flags & FLAG_NO_SAMPLE) return jsonAnswer('ok', frame, {})
      if (isVerify(frame)) return jsonAnswer('token', frame, verifiedTokens(output, computeMs))
      const sampled = await served.sampling.sample(served.runtime, frame.position + frame.tokens)
      const body: SampledToken = {
        token: sampled.token,
        logprob: sampled.logprob,
        computeMs,
        ...(sampled.top === undefined ? {} : { top: sampled.top }),
      }
      return jsonAnswer('token', frame, body)
    }
    const values = new Uint8Array(output.data.buffer, output.data.byteOffset, output.data.byteLength)
    const side = seamSide(this.seams, served.runtime.blocks[1], output.rows, input, output.indices)
    return {
      kind: 'hidden',
      dtype: output.dtype,
      flags: side === undefined ? 0 : FLAG_SIDE,
      session: frame.session,
      step: frame.step,
      position: frame.position,
      tokens: output.rows,
      width: output.cols,
      payload: side === undefined ? values : new Uint8Array(Buffer.concat([values, side])),
    }
  }
}

/** An ok or token answer to `request`, its body as JSON. */
function jsonAnswer(kind: 'ok' | 'token', request: Frame, body: unknown): Frame {
  const payload = new TextEncoder().encode(JSON.stringify(body))
  return {
    kind,
    dtype: 'json',
    flags: 0,
    session: request.session,
    step: request.step,
    position: 0,
    tokens: 0,
    width: 0,
    payload,
  }
}
