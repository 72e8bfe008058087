// Hop-to-hop forwarding on the client side (docs/architecture.md, "the path of one token"): the client sends a step
// to the first hop of each run of hops that reach one another; each forwards its output straight to the next and sends
// the client only its receipt (a digest of its output); the run's last hop answers with its output or the token.
import { randomBytes } from 'node:crypto'
import { firstRows, type HopInput, type StepSigning } from '../../dataplane/hop-frames'
import { HopFailure } from '../../dataplane/hop-link'
import { payloadSha256 } from '../../identity/tickets'
import {
  decodeFrame,
  type ForwardingOpen,
  type Frame,
  jsonFrame,
  NeuronError,
  Receipt,
  type RouteHop,
  readJson,
  readTrailer,
  SampledToken,
  StepTrailer,
  withTrailer,
} from '../../protocol'
import { directLink as direct, type HopState } from '../open-hops'
import { checkedAnswer, committedSketch, keptRowsOf } from '../step-audits'
import { Countersigns } from './countersigns'
import { farLegs, farLegsSettled } from './far-legs'
import { type StepAt, type StepRunner, stepForward } from './step-runner'

/** For each seam of the route, whether its two hops pass hidden states to each other (else the client carries it). */
export function directLegs(route: readonly RouteHop[]): boolean[] {
  return route.slice(1).map((next, i) => direct(route[i] as RouteHop) && direct(next))
}

/** How the client reaches a hop: its own port, a channel punched through the routers, or a relay. */
export type Reach = 'direct' | 'punched' | 'relayed'

export const reachOf = (hop: RouteHop, punched: boolean): Reach =>
  direct(hop) ? 'direct' : punched ? 'punched' : 'relayed'

/**
 * For each seam, whether its two hops may pass hidden states to each other: both reach the client on a channel it
 * holds (a hop pushes its digest, or its successor's refusal, unasked: a relay carries only answers), and the first
 * reaches the second at its port or over a channel it punches itself (a host behind a router the client punched
 * through answers other hosts' punches alike; one that does not leaves that seam's leg to the client).
 */
export function forwardableLegs(reach: readonly Reach[]): boolean[] {
  return reach.slice(1).map((next, i) => reach[i] !== 'relayed' && next !== 'relayed')
}

/** What each hop's open says about forwarding: a fresh capability per forwarded seam, given to its two hops alone. */
export function chainOpenings(route: readonly RouteHop[], legs: readonly boolean[]): (ForwardingOpen | undefined)[] {
  const caps = legs.map((d) => (d ? randomBytes(32).toString('hex') : undefined))
  return route.map((_, i) => {
    const [accept, capability, next] = [caps[i - 1], caps[i], route[i + 1]]
    // the successor at its port, pinned to its certificate; else through a channel this hop punches to it
    const where =
      next === undefined
        ? undefined
        : direct(next)
          ? {
              endpoint: next.endpoint as string,
              ...(next.fingerprint === undefined ? {} : { fingerprint: next.fingerprint }),
            }
          : { punch: next.hostId }
    const forward = capability === undefined || where === undefined ? {} : { next: { ...where, capability } }
    return { ...(accept === undefined ? {} : { accept }), ...forward }
  })
}

/**
 * An input the client never saw (a predecessor forwarded it): its step, the digest its predecessor signed for it, and
 * the rows the route kept of it (a verify step's accepted positions; all when absent).
 */
const unseen = new WeakMap<HopInput, { step: number; digest: string; rows?: number }>()

/** `input` cut to its first `rows` rows after a verify step; one the client never saw is cut once it is fetched. */
export function firstRowsOf(input: HopInput, rows: number): HopInput {
  const wanted = unseen.get(input)
  if (wanted === undefined || input.tokens <= rows) return firstRows(input, rows)
  const cut: HopInput = { ...input, tokens: rows }
  unseen.set(cut, { ...wanted, rows })
  return cut
}

function placeholder(step: number, from: Receipt): HopInput {
  // 'json' keeps it out of audits (step-audits.ts's evidence) until it is fetched
  const input: HopInput = { dtype: 'json', tokens: from.tokens, width: 0, payload: new Uint8Array(0) }
  unseen.set(input, { step, digest: from.output })
  return input
}

/**
 * A step's frame to the first hop of a run, asking it to forward when the run goes on past it: `through` hops on, the
 * run's last then answering the client whatever successor its open named.
 */
function stepFrame(input: HopInput, session: string, at: StepAt, signing: StepSigning, through: number): Uint8Array {
  const bytes = stepForward(input, session, at, signing)
  if (through === 0) return bytes
  const trailer = readTrailer(decodeFrame(bytes), StepTrailer)
  return withTrailer(bytes, { ...trailer, forward: true, through })
}

/**
 * Steps that travel from hop to hop where two hops reach each other, and through the client at the other seams: the
 * client sends a step to the first hop of each run of forwarding hops and takes the run's last answer.
 */
export class HopToHop implements StepRunner {
  constructor(
    public hops: HopState[],
    private readonly session: string,
    private readonly client: StepSigning['identity'],
    /** Whether each seam is forwarded (directLegs); a seam refused is turned to the client for the session's rest. */
    private legs: boolean[],
    /** 'auto': the seams that may be forwarded, turned on at the first step when far from the client (farLegs). */
    private auto?: readonly boolean[],
  ) {
    this.countersigns = new Countersigns(session, client)
  }

  private readonly countersigns: Countersigns

  signedReceipts(): Receipt[] {
    return this.countersigns.take()
  }

  allSignedReceipts(): Promise<Receipt[]> {
    return this.countersigns.settled()
  }

  async run(from: number, at: StepAt, input: HopInput, receipts: Receipt[]): Promise<SampledToken> {
    if (this.auto !== undefined) await this.decide(this.auto, at.step)
    return runChainStep(this.hops, from, this.session, at, input, receipts, this.client, this.legs, this.countersigns)
  }

  /**
   * 'auto' decided before the first step, the prompt's (the step that carries the most bytes over each seam), once the
   * pings after the opens are in; where one is not, the prompt goes through the client and the next step decides.
   */
  private async decide(auto: readonly boolean[], step: number): Promise<void> {
    const legs = step > 1 ? farLegs(this.hops, auto) : await farLegsSettled(this.hops, auto)
    if (legs === undefined) return
    // a failover while it waited decided it already (reroute)
    if (this.auto !== auto) return
    this.legs = legs
    this.auto = undefined
  }

  /**
   * After a failover, a seam whose two hops both stay (the same sessions, each neighbour's capability as opened) is
   * forwarded still; the client carries the seams into and out of a replacement, whose neighbours were not told of it.
   */
  reroute(hops: HopState[]): void {
    const before = this.hops
    // 'auto' not yet decided (a failover before the first step): the client carries every seam, as it would have
    const legs = this.auto === undefined ? this.legs : []
    this.legs = hops.slice(1).map((next, i) => {
      const at = before.indexOf(hops[i] as HopState)
      return at >= 0 && before[at + 1] === next && legs[at] === true
    })
    this.hops = hops
    this.auto = undefined
  }

  /**
   * Fetches what each picked hop was forwarded (from the hop before it) and what it forwarded on (from itself), each
   * checked against the digests their receipts sign, so its audit has every input and every step's sketch. A hop
   * whose bytes cannot be fetched is logged and left out of the audit.
   */
  async readyForAudit(picked: readonly HopState[], log: (line: string) => void): Promise<void> {
    for (const h of picked) {
      try {
        if (this.hops.includes(h)) await fillInputs(this.hops, h.hop.hostId, this.session)
        await fetchAnswers(h, this.session)
      } catch (error) {
        const why = (error as Error).message
        log(`audit of host ${h.hop.hostId} not run: its forwarded steps cannot be fetched (${why})`)
      }
    }
  }
}

/**
 * The answers `h` forwarded on (the client never saw them), fetched back from it: each must hash to its receipt's
 * output, and its sketch to the receipt's commitment; they fill `h.sketches` and the last its `lastOutput`.
 */
async function fetchAnswers(h: HopState, session: string): Promise<void> {
  // the last hop answered the client every step itself
  if (h.sampling !== undefined) return
  const last = h.receipts.length - 1
  await fetchingAtOnce([...h.receipts.entries()], async ([k, receipt]) => {
    // an answer the client saw has its sketch (and, the last, its lastOutput) already
    if (receipt?.commit === undefined || h.sketches[k] !== undefined) return
    const answer = await h.link.request(jsonFrame('fetch', session, receipt.step, { step: receipt.step }))
    if (payloadSha256(answer.payload) !== receipt.output)
      throw new HopFailure(
        h.hop.hostId,
        'lied',
        `host ${h.hop.hostId} answered other bytes than it signed at step ${receipt.step}`,
      )
    h.sketches[k] = committedSketch(h.hop.hostId, answer, receipt, h.sampling)
    if (k === last) h.lastOutput = new Uint8Array(answer.payload)
  })
}

/**
 * Fetches a link may have in flight at once: a host takes 8 frames of a connection at a time, and each fetch crosses
 * the network (one at a time, a 2 000-token session's audit took 2 000 round trips).
 */
const FETCHES_IN_FLIGHT = 4

/** Runs `fetch` over `items`, FETCHES_IN_FLIGHT at once; the first failure rejects (the rest still settle). */
async function fetchingAtOnce<T>(items: readonly T[], fetch: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < items.length) await fetch(items[next++] as T)
  }
  const workers = Array.from({ length: Math.min(FETCHES_IN_FLIGHT, items.length) }, worker)
  const settled = await Promise.allSettled(workers)
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected')
  if (failed !== undefined) throw failed.reason
}

/**
 * Runs one step from hop `from` on like client-relayed.ts, but where `legs[i]` hop i forwards to hop i + 1 itself.
 * Each hop's receipt must name as its input what the one before it signed as its output. A hop that fails leaves its
 * unseen inputs fetched from its predecessor first (fillInputs), so failover replays them.
 */
async function runChainStep(
  hops: HopState[],
  from: number,
  session: string,
  at: StepAt,
  first: HopInput,
  receipts: Receipt[],
  client: StepSigning['identity'],
  /** Whether each seam is forwarded; a seam refused is turned to the client here for the rest of the session. */
  legs: boolean[],
  countersigns: Countersigns,
): Promise<SampledToken> {
  try {
    let input = first
    for (let i = from; i < hops.length; ) {
      let end = i
      while (end < hops.length - 1 && legs[end] === true && hops[end + 1]?.link.expect !== undefined) end++
      const waits = hops.slice(i + 1, end + 1).map((h) => h.link.expect?.(session, at.step))
      // a forwarding hop tells its client when its successor refused what it forwarded (or is gone)
      const troubles: (Expected | undefined)[] = []
      const unsigned: [HopState, Receipt][] = []
      try {
        const h = hops[i] as HopState
        h.inputs.push(input)
        const started = performance.now()
        let answer = await h.link.request(stepFrame(input, session, at, { identity: client, ...h.hop }, end - i))
        if (input.tokens === 1) h.stepMs.push(performance.now() - started)
        let expected = payloadSha256(input.payload)
        for (let j = i; ; j++) {
          const hj = hops[j] as HopState
          if (j > i) {
            const got = await successorOrRefusal((waits[j - i - 1] as Expected).answer, troubles[j - i - 1]?.answer)
            if (got === 'refused') {
              // the client fetches what hop j - 1 forwarded and carries this leg itself, from now on
              legs[j - 1] = false
              hj.inputs.pop()
              input = await fetchForwarded(hops[j - 1] as HopState, session, at.step, expected, at.ids)
              i = j
              break
            }
            answer = got
          }
          const receipt = readTrailer(answer, Receipt)
          if (receipt === undefined)
            throw new HopFailure(
              hj.hop.hostId,
              'no_receipt',
              `host ${hj.hop.hostId} answered without its signed receipt; finding another host`,
            )
          if (receipt.input !== expected)
            throw new HopFailure(
              hj.hop.hostId,
              'bad_receipt',
              `host ${hj.hop.hostId} signed for other input than it was sent; finding another host`,
            )
          // forwarded in: the client's to hand in once countersigned (countersigns.ts)
          if (j === i) receipts.push(receipt)
          hj.receipts.push(receipt)
          // forwarded on, the client never sees the rows: their commitment is checked where they are fetched
          hj.sketches.push(undefined)
          if (j > i) unsigned.push([hj, receipt])
          const next = hops[j + 1]
          if (answer.kind === 'ok' && j < end && next !== undefined) {
            // forwarded: the next hop holds the input, the client its digest
            next.inputs.push(placeholder(at.step, receipt))
            expected = receipt.output
            troubles.push(hj.link.expect?.(session, at.step))
            continue
          }
          if (receipt.output !== payloadSha256(answer.payload))
            throw new HopFailure(
              hj.hop.hostId,
              'bad_receipt',
              `host ${hj.hop.hostId} signed for other output than it answered; finding another host`,
            )
          hj.lastOutput = new Uint8Array(answer.payload)
          hj.sketches[hj.sketches.length - 1] = committedSketch(hj.hop.hostId, answer, receipt, hj.sampling)
          if (answer.kind === 'token') return readJson(answer, SampledToken)
          if (answer.kind !== 'hidden')
            throw new NeuronError('bad_frame', `host ${hj.hop.hostId} answered a forward with ${answer.kind}`)
          // the end of the run, or a successor it could not reach: the client carries the next leg
          input = checkedAnswer(hj.hop, answer, at.ids)
          i = j + 1
          break
        }
      } finally {
        for (const w of [...waits, ...troubles]) w?.cancel()
        // forwarded in: signed by the client once the step is through,
        // off the critical path (the host hands in the signed receipt)
        for (const [h, receipt] of unsigned) countersigns.sign(h, receipt)
      }
    }
    throw new NeuronError('internal', 'the route ended without a last hop')
  } catch (error) {
    if (error instanceof HopFailure) await fillInputs(hops, error.hostId, session)
    throw error
  }
}

type Expected = NonNullable<ReturnType<NonNullable<HopState['link']['expect']>>>

/** The successor's frame, or 'refused' when the hop before it says it refused what it was forwarded. */
function successorOrRefusal(answer: Promise<Frame>, trouble: Promise<Frame> | undefined): Promise<Frame | 'refused'> {
  if (trouble === undefined) return answer
  const never = new Promise<never>(() => {})
  const refusal = trouble.then(
    () => never,
    (error: unknown) => {
      if (error instanceof NeuronError && error.code === 'forward_refused') return 'refused' as const
      if (error instanceof HopFailure && error.code === 'cancelled') return never
      throw error
    },
  )
  return Promise.race([answer, refusal])
}

/** What `h` forwarded at `step`, fetched back and checked against the digest it signed, as the next hop's input. */
async function fetchForwarded(
  h: HopState,
  session: string,
  step: number,
  digest: string,
  ids: Int32Array | undefined,
): Promise<HopInput> {
  // the hop's word that its successor refused the step, pushed as this is asked, waits under its own key (pushKey)
  const answer = await h.link.request(jsonFrame('fetch', session, step, { step }))
  if (payloadSha256(answer.payload) !== digest)
    throw new HopFailure(
      h.hop.hostId,
      'lied',
      `host ${h.hop.hostId} answered other bytes than it signed at step ${step}`,
    )
  return checkedAnswer(h.hop, answer, ids)
}

/**
 * Fetches the inputs hop `hostId` was forwarded and the client never saw from the hop before it, checked against the
 * digest that hop signed, so failover can replay them. One that cannot be fetched stays a placeholder (replay fails).
 */
async function fillInputs(hops: readonly HopState[], hostId: string, session: string): Promise<void> {
  const at = hops.findIndex((h) => h.hop.hostId === hostId)
  const [h, before] = [hops[at], hops[at - 1]]
  if (h === undefined || before === undefined) return
  await fetchingAtOnce([...h.inputs.entries()], async ([k, input]) => {
    const wanted = unseen.get(input)
    if (wanted === undefined) return
    try {
      const fetched = await fetchForwarded(before, session, wanted.step, wanted.digest, undefined)
      h.inputs[k] = wanted.rows === undefined ? fetched : keptRowsOf(firstRows(fetched, wanted.rows), fetched)
    } catch (error) {
      // the predecessor is gone or lied too: the failover of this hop cannot replay, and the generation fails typed
      const why = `cannot fetch what host ${before.hop.hostId} forwarded: ${(error as Error).message}`
      throw new HopFailure(before.hop.hostId, 'unreachable_input', why)
    }
  })
}
