import { forwardFrame, type HopInput, type StepSigning } from '../dataplane/hop-frames'
import type { HopLink } from '../dataplane/hop-link'
import {
  FLAG_NO_SAMPLE,
  FLAG_VERIFY,
  jsonFrame,
  NeuronError,
  Receipt,
  readJson,
  readTrailer,
  SampledToken,
} from '../protocol'
import { type AuditableHop, checkedAnswer, checkReceipt } from './step-audits'

/** Inputs sent to one hop so far, kept so a replacement can rebuild its KV cache by replay (and for audits). */
export interface HopState extends AuditableHop {
  link: HopLink
  stepMs: number[]
}

/** Where a step stands: its number, its first position, the token ids it feeds the route. */
export interface StepAt {
  readonly step: number
  readonly position: number
  readonly ids: Int32Array
  /** A speculative check (FLAG_VERIFY): the last token and drafts; the last hop answers the greedy token after each. */
  readonly verify?: boolean
}

/**
 * Runs one step from hop `from` on, starting with `first`; returns the last hop's token. Each hop's
 * receipt is checked against the bytes sent and answered, and collected in `receipts`.
 */
export async function runStep(
  hops: HopState[],
  from: number,
  session: string,
  at: StepAt,
  first: HopInput,
  receipts: Receipt[],
  client: StepSigning['identity'],
): Promise<SampledToken> {
  let input = first
  for (let i = from; i < hops.length; i++) {
    const h = hops[i] as HopState
    // Recorded before sending: if this hop fails, its replacement replays all but this and retries it.
    h.inputs.push(input)
    const started = performance.now()
    const answer = await h.link.request(stepForward(input, session, at, { identity: client, ...h.hop }))
    if (input.tokens === 1) h.stepMs.push(performance.now() - started)
    const receipt = readTrailer(answer, Receipt)
    checkReceipt(h.hop.hostId, input, answer.payload, receipt)
    if (receipt !== undefined) receipts.push(receipt)
    h.receipts.push(receipt)
    h.lastOutput = new Uint8Array(answer.payload)
    if (answer.kind === 'token') return readJson(answer, SampledToken)
    if (answer.kind !== 'hidden')
      throw new NeuronError('bad_frame', `host ${h.hop.hostId} answered a forward with ${answer.kind}`)
    input = checkedAnswer(h.hop, answer, at.ids)
  }
  throw new NeuronError('internal', 'the route ended without a last hop')
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

/**
 * What `hops` hold now; the returned function takes back whatever a step run after this added (a step
 * run beside the audits of the one before it, undone when those find a liar). The hops' caches need no
 * undoing: the step runs again at the same position, and a host rolls its cache back to it.
 */
export function markHops(hops: readonly HopState[]): () => void {
  const marks = hops.map((h) => ({ h, inputs: h.inputs.length, receipts: h.receipts.length, lastOutput: h.lastOutput }))
  return () => {
    for (const m of marks) {
      m.h.inputs.length = m.inputs
      m.h.receipts.length = m.receipts
      m.h.lastOutput = m.lastOutput
    }
  }
}

/** Closes the session on every hop (a hop that is gone has nothing left to close) and hangs up. */
export async function closeHops(hops: readonly HopState[], session: string): Promise<void> {
  await Promise.all(
    hops.map(async (h) => {
      await h.link.request(jsonFrame('close', session, 0xfffffffe, {})).catch(() => {})
      h.link.close()
    }),
  )
}

/**
 * Rebuilds a hop's cache: sends it `chunks` from position 0 with the no-sample flag, numbered from `firstStep`,
 * checking each receipt. Returns its answers as the next hop's inputs (none from the last hop).
 */
export async function replay(
  h: HopState,
  chunks: readonly HopInput[],
  session: string,
  firstStep: number,
  collect: (receipts: Receipt[]) => Promise<void>,
  client: StepSigning['identity'],
): Promise<HopInput[]> {
  let position = 0
  let step = firstStep
  const outputs: HopInput[] = []
  h.inputs = []
  h.receipts = []
  for (const chunk of chunks) {
    h.inputs.push(chunk)
    const answer = await h.link.request(
      forwardFrame(chunk, FLAG_NO_SAMPLE, session, step++, position, { identity: client, ...h.hop }),
    )
    position += chunk.tokens
    const receipt = readTrailer(answer, Receipt)
    checkReceipt(h.hop.hostId, chunk, answer.payload, receipt)
    h.receipts.push(receipt)
    h.lastOutput = new Uint8Array(answer.payload)
    if (receipt !== undefined) await collect([receipt])
    if (answer.kind === 'hidden') outputs.push(checkedAnswer(h.hop, answer, undefined))
  }
  return outputs
}

/** What `p` resolves to, or undefined as soon as `signal` aborts: a caller that has gone waits for nothing. */
export function unlessAborted<T>(p: Promise<T> | undefined, signal: AbortSignal | undefined): Promise<T | undefined> {
  if (p === undefined || signal === undefined) return Promise.resolve(p)
  if (signal.aborted) return Promise.resolve(undefined)
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(undefined)
    signal.addEventListener('abort', onAbort, { once: true })
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}
