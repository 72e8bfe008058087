import { type HopInput, hiddenInput } from '../dataplane/hop-frames'
import { HopFailure } from '../dataplane/hop-link'
import { payloadSha256 } from '../identity/tickets'
import {
  type AuditedStep,
  type AuditRequest,
  ClientToTracker,
  callRpc,
  type Frame,
  MAX_AUDIT_BYTES,
  MAX_AUDITS_IN_FLIGHT,
  type Receipt,
  type RouteHop,
  type RpcSocket,
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
  /** The answer to the last input. */
  lastOutput: Uint8Array | undefined
}

/** How long a step waits for its audit: a re-run of the hop's history on another host (and a third on disagreement). */
const AUDIT_TIMEOUT_MS = 20_000

/**
 * Checks what a hop answered against what it signed: the receipt must name the input it was sent and
 * the answer it gave. A host whose receipt is missing or does not match the bytes it sent answers for
 * nothing, so the step goes to another host (the cheap check on every step).
 */
export function checkReceipt(hostId: string, input: HopInput, answer: Uint8Array, receipt: Receipt | undefined): void {
  // A ticketed host signs every answer: one without a receipt could never be audited, so it is not taken.
  if (receipt === undefined)
    throw new HopFailure(
      hostId,
      'no_receipt',
      `host ${hostId} answered without its signed receipt; finding another host`,
    )
  if (receipt.input !== payloadSha256(input.payload) || receipt.output !== payloadSha256(answer))
    throw new HopFailure(
      hostId,
      'bad_receipt',
      `host ${hostId} signed a receipt for other bytes than it was sent or answered; finding another host`,
    )
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
 * Audits the step just run: each hop is picked at the rate its route names, and the tracker re-runs
 * its inputs on another host and compares. What is sent is taken from `hops` now, so the next step may
 * run while the audits do. The picked hops' audits run at once (a step waits for the slowest, not for
 * their sum), within the key's slots. Undefined when no hop was picked; else resolves with the first hop
 * the tracker found lying (already banned there), if any. An audit that cannot run is logged and never
 * holds up the generation.
 */
export function auditStep(
  tracker: RpcSocket & { readonly connected: boolean },
  session: string,
  hops: readonly AuditableHop[],
  log: (line: string) => void,
  random: () => number = Math.random,
): Promise<AuditableHop | undefined> | undefined {
  const picked: { h: AuditableHop; request: AuditRequest }[] = []
  for (const h of hops) {
    // The data plane runs on while the tracker is away; audits wait for it to come back.
    if (!tracker.connected || random() >= (h.hop.audit ?? 0)) continue
    const history = evidence(h)
    if (history === undefined || h.lastOutput === undefined) continue
    picked.push({
      h,
      request: { session, hostId: h.hop.hostId, blocks: h.hop.blocks, ...history, output: h.lastOutput },
    })
  }
  if (picked.length === 0) return undefined
  const slots = slotsOf.get(tracker) ?? limitAudits(tracker)
  const audit = async ({ h, request }: (typeof picked)[number]): Promise<AuditableHop | undefined> => {
    try {
      const { verdict, liar, reason } = await slots.run(() => {
        // queued while the tracker went away (or the client closed): not sent into a dead connection
        if (!tracker.connected) throw new Error('the tracker is not connected')
        return callRpc(tracker, ClientToTracker, 'audit.submit', request, AUDIT_TIMEOUT_MS)
      })
      if (verdict === 'failed' && liar === h.hop.hostId) {
        log(`audit: host ${liar} [${h.hop.blocks[0]}, ${h.hop.blocks[1]}) lied (${reason}); replacing it`)
        return h
      }
    } catch (error) {
      log(`audit of host ${h.hop.hostId} not run: ${error instanceof Error ? error.message : error}`)
    }
    return undefined
  }
  return Promise.all(picked.map(audit)).then((found) => found.find((h) => h !== undefined))
}

/** The hop's steps as the tracker wants them, or undefined when a receipt is missing or they are too large to send. */
function evidence(h: AuditableHop): { steps: AuditedStep[]; payloads: Uint8Array } | undefined {
  const steps: AuditedStep[] = []
  let bytes = h.lastOutput?.byteLength ?? 0
  for (const [i, input] of h.inputs.entries()) {
    const receipt = h.receipts[i]
    bytes += input.payload.byteLength
    if (receipt === undefined || input.dtype === 'json' || bytes > MAX_AUDIT_BYTES) return undefined
    steps.push({
      receipt,
      dtype: input.dtype,
      tokens: input.tokens,
      width: input.width,
      bytes: input.payload.byteLength,
      side: input.side ?? 0,
    })
  }
  if (steps.length === 0) return undefined
  return { steps, payloads: Buffer.concat(h.inputs.map((i) => i.payload)) }
}
