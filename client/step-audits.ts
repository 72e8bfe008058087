import { type HopInput, hiddenInput } from '../dataplane/hop-frames'
import { HopFailure } from '../dataplane/hop-link'
import { payloadSha256 } from '../identity/tickets'
import {
  type AuditedStep,
  type AuditRequest,
  ClientToTracker,
  callRpc,
  type Frame,
  frameSketch,
  MAX_AUDIT_BYTES,
  MAX_AUDITS_IN_FLIGHT,
  type Receipt,
  type RouteHop,
  type RpcSocket,
  SamplingParams,
  samplingCommitment,
  seamSideValues,
  sideOf,
  sidePerToken,
  splitSide,
} from '../protocol'

/** What a client keeps of one hop to have a step of it checked: every input, receipt and the last answer. */
export interface AuditableHop {
  readonly hop: RouteHop
  inputs: HopInput[]
  /** The hop's signed receipt for each of `inputs`, in order (undefined where it signed none). */
  receipts: (Receipt | undefined)[]
  /**
   * The sketch of each answer's rows its receipt commits to (protocol/commitment.ts), in order: what an audit by
   * prefill compares every step with. Undefined where the client never saw the answer (forwarded on) or it is a token.
   */
  sketches: (Uint8Array | undefined)[]
  /** The answer to the last input. */
  lastOutput: Uint8Array | undefined
  /**
   * The sampling a last hop was opened with: its receipts for tokens commit to it (protocol/commitment.ts
   * samplingCommitment), and an audit re-draws the last token with it. Undefined for every other hop.
   */
  sampling?: SamplingParams
}

/**
 * A verify step's input as the client recorded it, cut to the rows the route kept (speculation.ts), back to the
 * whole input the hop signed it took: an audit sends the whole (its digest is the receipt's) and names the rows kept.
 */
const wholeOf = new WeakMap<HopInput, HopInput>()

/** Records that `cut` is the first rows of `whole` (a verify step's accepted positions). */
export function keptRowsOf(cut: HopInput, whole: HopInput): HopInput {
  if (cut !== whole) wholeOf.set(cut, wholeOf.get(whole) ?? whole)
  return cut
}

/** How long an audit may take: a re-run of the hop's history on another host (and a third on disagreement). */
const AUDIT_TIMEOUT_MS = 60_000

/**
 * Checks what a hop answered against what it signed: the receipt must name the input it was sent, the answer it gave
 * and, for hidden states, the sketch of its rows (the commitment an audit compares). A host whose receipt is missing
 * or does not match the bytes it sent answers for nothing, so the step goes to another host (the cheap check on every
 * step). Returns the sketch, to keep for audits.
 */
export function checkReceipt(
  hostId: string,
  input: HopInput,
  answer: Frame,
  receipt: Receipt | undefined,
  sampling?: SamplingParams,
): Uint8Array | undefined {
  // A ticketed host signs every answer: one without a receipt could never be audited, so it is not taken.
  if (receipt === undefined)
    throw new HopFailure(
      hostId,
      'no_receipt',
      `host ${hostId} answered without its signed receipt; finding another host`,
    )
  if (receipt.input !== payloadSha256(input.payload) || receipt.output !== payloadSha256(answer.payload))
    throw new HopFailure(
      hostId,
      'bad_receipt',
      `host ${hostId} signed a receipt for other bytes than it was sent or answered; finding another host`,
    )
  return committedSketch(hostId, answer, receipt, sampling)
}

/**
 * The sketch of a hidden-state answer's rows, checked against the commitment its receipt signs. A last hop's token
 * answer commits to the session's `sampling` instead (an audit re-draws the token with it): checked, no sketch kept.
 */
export function committedSketch(
  hostId: string,
  answer: Frame,
  receipt: Receipt,
  sampling?: SamplingParams,
): Uint8Array | undefined {
  if (answer.kind === 'token' && sampling !== undefined) {
    if (receipt.commit !== payloadSha256(samplingCommitment(sampling)))
      throw new HopFailure(
        hostId,
        'bad_receipt',
        `host ${hostId} signed no commitment, or another one, to the sampling it was opened with; finding another host`,
      )
    return undefined
  }
  const sketch = frameSketch(answer)
  if (sketch !== undefined && receipt.commit !== payloadSha256(sketch))
    throw new HopFailure(
      hostId,
      'bad_receipt',
      `host ${hostId} signed no commitment, or another one, to the rows it answered; finding another host`,
    )
  return sketch
}

/**
 * Checks a hop's hidden-state answer against what its route says crosses after it (`seamOut`): the width, the side
 * values per token, and the token ids it passes on, which must be the step's own (`stepIds`, when the caller knows
 * them). A hop that alters them would steer the next hop's hash-routed experts or its attention: it lied. Returns the
 * answer as the next hop's input.
 */
export function checkedAnswer(hop: RouteHop, answer: Frame, stepIds: Int32Array | undefined): HopInput {
  const seam = hop.seamOut
  if (seam === undefined) return hiddenInput(answer)
  const side = sidePerToken(answer)
  if (answer.width !== seam.values || side !== seamSideValues(seam))
    throw new HopFailure(
      hop.hostId,
      'lied',
      `host ${hop.hostId} answered ${answer.width} values and ${side} side values per token where ${seam.values} ` +
        `and ${seamSideValues(seam)} cross after block ${hop.blocks[1] - 1}; finding another host`,
    )
  const ids = seam.tokenIds && stepIds !== undefined ? splitSide(seam, sideOf(answer)).tokenIds : undefined
  if (
    stepIds !== undefined &&
    ids !== undefined &&
    (ids.length !== stepIds.length || ids.some((t, i) => t !== stepIds[i]))
  )
    throw new HopFailure(
      hop.hostId,
      'lied',
      `host ${hop.hostId} passed on other token ids than the step's; finding another host`,
    )
  return hiddenInput(answer)
}

/**
 * A key's audits in flight at its tracker, over all its sessions: the tracker refuses more than MAX_AUDITS_IN_FLIGHT
 * (and a refused audit is a step never checked), so past that they wait here for a slot.
 */
class AuditSlots {
  private readonly waiting: (() => void)[] = []
  constructor(private free: number) {}

  async run<T>(audit: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--
    else await new Promise<void>((resolve) => this.waiting.push(resolve))
    try {
      return await audit()
    } finally {
      const next = this.waiting.shift()
      if (next === undefined) this.free++
      else next()
    }
  }
}

/** One set of slots per tracker connection (one key): shared by every session the client runs on it. */
const slotsOf = new WeakMap<object, AuditSlots>()

/** How many audits the key of this tracker connection may have in flight (the tracker's own gateway: no cap). */
export function limitAudits(tracker: object, inFlight = MAX_AUDITS_IN_FLIGHT): AuditSlots {
  // at least one (0, a negative or NaN would hold every audit, and the chats waiting for them, for good)
  const slots = new AuditSlots(Number.isNaN(inFlight) ? 1 : Math.max(inFlight, 1))
  slotsOf.set(tracker, slots)
  return slots
}

/**
 * Whether a session picks `hop` for an audit once it is over: at the chance its route names (its own hosts' never).
 * One audit covers every step of the hop, so the chance is per session, drawn once per hop.
 */
export function picks(hop: RouteHop, random: () => number = Math.random): boolean {
  return random() < (hop.audit ?? 0)
}

/**
 * Audits hops of a session once it is over, off its critical path: the tracker re-runs each hop's steps on another
 * host as one prefill and compares every step's rows with the sketch its receipt commits to (commitment.ts). The hops'
 * audits run at once, within the key's slots. Resolves with the hops the tracker found lying (banned there, and their
 * pending earnings refunded); an audit that cannot run is logged, never thrown.
 */
export async function auditHops(
  tracker: RpcSocket & { readonly connected: boolean },
  session: string,
  hops: readonly AuditableHop[],
  log: (line: string) => void,
): Promise<AuditableHop[]> {
  const picked: { h: AuditableHop; request: AuditRequest }[] = []
  for (const h of hops) {
    const history = evidence(h)
    if (history === undefined || h.lastOutput === undefined) continue
    picked.push({
      h,
      request: {
        session,
        hostId: h.hop.hostId,
        blocks: h.hop.blocks,
        ...history,
        output: h.lastOutput,
        ...(h.sampling === undefined ? {} : { sampling: SamplingParams.parse(h.sampling) }),
      },
    })
  }
  const slots = slotsOf.get(tracker) ?? limitAudits(tracker)
  const audit = async ({ h, request }: (typeof picked)[number]): Promise<AuditableHop | undefined> => {
    try {
      const { verdict, liar, reason } = await slots.run(() => {
        // queued while the tracker went away (or the client closed): not sent into a dead connection
        if (!tracker.connected) throw new Error('the tracker is not connected')
        return callRpc(tracker, ClientToTracker, 'audit.submit', request, AUDIT_TIMEOUT_MS)
      })
      if (verdict === 'failed' && liar === h.hop.hostId) {
        log(`audit: host ${liar} [${h.hop.blocks[0]}, ${h.hop.blocks[1]}) lied (${reason}); it is banned`)
        return h
      }
    } catch (error) {
      log(`audit of host ${h.hop.hostId} not run: ${error instanceof Error ? error.message : error}`)
    }
    return undefined
  }
  const found = await Promise.all(picked.map(audit))
  return found.filter((h) => h !== undefined)
}

/** The hop's steps as the tracker wants them, or undefined when a receipt is missing or they are too large to send. */
function evidence(h: AuditableHop): { steps: AuditedStep[]; payloads: Uint8Array; sketches?: Uint8Array } | undefined {
  const steps: AuditedStep[] = []
  let bytes = h.lastOutput?.byteLength ?? 0
  const wholes: HopInput[] = []
  for (const [i, input] of h.inputs.entries()) {
    const receipt = h.receipts[i]
    const whole = wholeOf.get(input) ?? input
    bytes += whole.payload.byteLength
    if (receipt === undefined || whole.dtype === 'json' || bytes > MAX_AUDIT_BYTES) return undefined
    if (whole.tokens !== receipt.tokens) return undefined
    wholes.push(whole)
    steps.push({
      receipt,
      dtype: whole.dtype,
      tokens: whole.tokens,
      width: whole.width,
      bytes: whole.payload.byteLength,
      side: whole.side ?? 0,
      // a verify step: the route kept only its first rows
      ...(input.tokens < whole.tokens ? { kept: input.tokens } : {}),
    })
  }
  if (steps.length === 0) return undefined
  const payloads = Buffer.concat(wholes.map((i) => i.payload))
  // every step's commitment, when the client saw every answer: the audit compares them all in one prefill
  const sketches = h.sketches.length === steps.length ? h.sketches : []
  if (sketches.length === 0 || sketches.some((k) => k === undefined)) return { steps, payloads }
  return { steps, payloads, sketches: Buffer.concat(sketches as Uint8Array[]) }
}
