// Hop-to-hop forwarding on the host side (docs/architecture.md, "the path of one token"): a step the client asks
// forwarded goes on from here straight to the next hop, and the client gets this hop's receipt (a digest of its output)
// instead of the output; the next hop takes it only with the seam's capability and this hop's receipt of it.
import { type HopLink, WebSocketHopLink } from '../../dataplane/hop-link'
import { IdleLinks, keptLinkAnswers, linkKey } from '../../dataplane/idle-links'
import { verifySignature } from '../../identity/keys'
import {
  type ChainedReceipt,
  ChainTrailer,
  CountersignStep,
  decodeFrame,
  encodeFrame,
  errorFrame,
  FetchOutput,
  FLAG_VERIFY,
  ForwardedStepTrailer,
  type ForwardingOpen,
  type Frame,
  jsonFrame,
  NeuronError,
  Receipt,
  readJson,
  readTrailer,
  receiptMessage,
  stepMessage,
} from '../../protocol'
import type { FrameCaller, ServedSession } from './served-session'

/** What forwarding needs of its server: to push a frame to a session's client unasked, and a log. */
export interface ForwardingHost {
  push(caller: FrameCaller, bytes: Uint8Array): boolean
  readonly log?: ((line: string) => void) | undefined
  readonly signer?: { sign(message: string): string } | undefined
  /** Told every receipt to hand in: signed ones, and at a session's end its uncountersigned ones with their chain. */
  readonly onReceipt?: ((receipt: Receipt | ChainedReceipt) => void) | undefined
  /**
   * A link over a channel punched to `hostId` (a successor that takes no connections; the host's punched paths, kept
   * across sessions), or undefined where none opens soon: that seam's leg goes through the client.
   */
  readonly punchTo?: ((hostId: string) => Promise<HopLink | undefined>) | undefined
}

type Next = NonNullable<ForwardingOpen['next']>

/** A forward frame's hop-to-hop trailer, when it came from a predecessor hop rather than the session's client. */
export function chainTrailer(frame: Frame): ChainTrailer | undefined {
  return readTrailer(frame, ChainTrailer)
}

/** Forwards answers to successors and keeps what it forwarded until the client asks (audits, failover replay). */
export class Forwarder {
  /** One link per session to its successor (a connection's frames in flight are bounded per connection). */
  private readonly links = new Map<string, Promise<HopLink | undefined>>()
  /** WebSocket links of sessions gone, for the next session to the same successor (its endpoint and certificate). */
  private readonly idle = new IdleLinks()
  /** The successor each session's WebSocket link goes to (punched links are the host's own, kept across sessions). */
  private readonly successors = new Map<string, string>()
  /** The answers forwarded, by session and step: the client, which never saw them, may ask for them. */
  private readonly kept = new Map<string, Map<number, Uint8Array>>()
  /** Receipts of forwarded-in steps waiting for their client's signature, by session and step, with their chain. */
  private readonly unsigned = new Map<string, Map<number, ChainedReceipt>>()

  constructor(private readonly host: ForwardingHost) {}

  /**
   * After a step: when it asked to be forwarded and this hop has a successor, sends the output on and answers a
   * digest (ok + this hop's receipt) instead; a successor it cannot reach gets nothing, and the client gets the whole
   * answer (that leg falls back to the client). A forwarded-in step answers its predecessor ok and its client here.
   */
  async after(
    served: ServedSession,
    request: Frame,
    chain: ChainTrailer | undefined,
    answer: Uint8Array,
  ): Promise<Uint8Array> {
    const asked = chain === undefined ? readTrailer(request, ForwardedStepTrailer) : undefined
    if (chain === undefined && asked === undefined) return answer
    const out = decodeFrame(answer)
    const receipt = readTrailer(out, Receipt)
    const next = served.open.forwarding?.next
    // hops the client wants the step to go past this one (absent: as far as the opens reach)
    const through = chain === undefined ? asked?.through : chain.through
    let forwarded = false
    if (out.kind === 'hidden' && receipt !== undefined && next !== undefined && through !== 0) {
      // a verify step stays one on the next hop: it runs every position, and the last hop answers the token after each
      const onward = { ...out, flags: out.flags | (request.flags & FLAG_VERIFY) }
      forwarded = await this.send(served.owner, next, onward, {
        capability: next.capability,
        origin: chain?.origin ?? receipt,
        prev: receipt,
        ...(through === undefined ? {} : { through: through - 1 }),
      })
      if (forwarded) this.keep(request.session, request.step, answer)
    }
    const toClient = forwarded
      ? encodeFrame({
          ...out,
          kind: 'ok',
          dtype: 'json',
          flags: 0,
          tokens: 0,
          width: 0,
          payload: new TextEncoder().encode('{}'),
        })
      : answer
    if (chain === undefined) return toClient
    if (receipt !== undefined) {
      const chained = { ...receipt, chain: { origin: chain.origin, prev: chain.prev } }
      this.unsigned.set(request.session, (this.unsigned.get(request.session) ?? new Map()).set(request.step, chained))
    }
    if (!this.host.push(served.owner, toClient))
      this.host.log?.(`session ${request.session}: its client is not connected here; step ${request.step} not reported`)
    return jsonFrame('ok', request.session, request.step, {})
  }

  /** The output this hop forwarded at the fetch frame's step, as it answered it (hidden states and receipt). */
  fetch(frame: Frame, served: ServedSession | undefined): Uint8Array {
    if (served === undefined) throw new NeuronError('unknown_session', `no open session ${frame.session} on this host.`)
    const { step } = readJson(frame, FetchOutput)
    const kept = step === frame.step ? this.kept.get(frame.session)?.get(step) : undefined
    if (kept === undefined)
      throw new NeuronError(
        'not_kept',
        `this host forwarded no output at step ${step} of session ${frame.session}; it keeps only what it forwarded.`,
      )
    return kept
  }

  /**
   * The client's signature of a forwarded-in step, checked against the session's client key over the input this hop's
   * receipt names: the receipt is signed again with it in, handed in (onReceipt) and answered.
   */
  countersign(frame: Frame, served: ServedSession | undefined): Uint8Array {
    if (served === undefined) throw new NeuronError('unknown_session', `no open session ${frame.session} on this host.`)
    const { client } = readJson(frame, CountersignStep)
    const held = this.unsigned.get(frame.session)?.get(frame.step)
    if (held === undefined || this.host.signer === undefined)
      throw new NeuronError(
        'not_kept',
        `this host holds no unsigned receipt for step ${frame.step} of session ${frame.session}.`,
      )
    const { signature: _, chain: __, ...body } = held
    const terms = {
      session: body.session,
      hostId: body.hostId,
      blocks: body.blocks,
      step: body.step,
      position: body.position,
      tokens: body.tokens,
    }
    if (!verifySignature(served.clientKeyObject, stepMessage({ ...terms, input: body.input }), client))
      throw new NeuronError(
        'bad_step_signature',
        `the signature for step ${frame.step} is not the session client's over the input this hop took.`,
      )
    this.unsigned.get(frame.session)?.delete(frame.step)
    const signedBody = { ...body, client }
    const receipt: Receipt = { ...signedBody, signature: this.host.signer.sign(receiptMessage(signedBody)) }
    this.host.onReceipt?.(receipt)
    return encodeFrame({
      ...decodeFrame(jsonFrame('ok', frame.session, frame.step, {})),
      trailer: new TextEncoder().encode(JSON.stringify(receipt)),
    })
  }

  /**
   * The oldest step forwarded into `session` whose countersign its client owes a step late, when `step` comes: a
   * client countersigns off the critical path, so the step just before may still be on its way; undefined when none.
   */
  owedCountersign(session: string, step: number): number | undefined {
    for (const owed of this.unsigned.get(session)?.keys() ?? []) if (owed < step - 1) return owed
    return undefined
  }

  /**
   * Lets go of a closed session's link and kept outputs; the receipts its client never countersigned are handed in
   * with their chain (the tracker pays them from it).
   */
  forget(session: string): void {
    this.kept.delete(session)
    for (const chained of this.unsigned.get(session)?.values() ?? []) this.host.onReceipt?.(chained)
    this.unsigned.delete(session)
    const link = this.links.get(session)
    const successor = this.successors.get(session)
    this.links.delete(session)
    this.successors.delete(session)
    void link?.then((l) => {
      if (successor !== undefined && l instanceof WebSocketHopLink) this.idle.park(successor, l)
      else l?.close()
    })
  }

  /** Closes the links kept idle (the host stops; sessions' own links went with their sessions). */
  close(): void {
    this.idle.close()
  }

  private keep(session: string, step: number, answer: Uint8Array): void {
    const steps = this.kept.get(session) ?? new Map<number, Uint8Array>()
    this.kept.set(session, steps.set(step, answer))
  }

  /**
   * A session opened with a successor: its link is taken from the idle ones or started now, so that its first
   * forwarded step finds it open (a punch takes 0.2-0.5 s, a connection's handshakes three round trips, a step a few
   * ms).
   */
  opened(session: string, next: Next | undefined): void {
    if (next !== undefined && !this.links.has(session)) this.links.set(session, this.connect(session, next))
  }

  /** The session's link to its successor: a WebSocket to its endpoint, else a channel punched to it. */
  private connect(session: string, next: Next): Promise<HopLink | undefined> {
    const unreachable = (why: string) => {
      this.host.log?.(`session ${session}: cannot reach the next hop ${why}; the client carries that leg`)
      return undefined
    }
    if (next.endpoint === undefined) {
      const hostId = next.punch as string
      return (this.host.punchTo?.(hostId) ?? Promise.resolve(undefined)).then(
        (link) => link ?? unreachable(`${hostId} (no channel punched to it)`),
        (error: Error) => unreachable(`${hostId} (${error.message})`),
      )
    }
    const { endpoint, fingerprint } = next
    const successor = linkKey(endpoint, fingerprint)
    this.successors.set(session, successor)
    const fresh = () =>
      WebSocketHopLink.connect('next-hop', endpoint, { fingerprint }).catch((error: Error) =>
        unreachable(`at ${endpoint} (${error.message})`),
      )
    const parked = this.idle.take(successor)
    if (parked === undefined) return fresh()
    // a kept link whose path went silent (a router dropped it without a word) would hold the first forwarded step
    // until its silence watch gave up, and the client would carry the leg: pinged first, as the client's kept links are
    return keptLinkAnswers(parked).then((answers) => {
      if (answers) return parked
      this.host.log?.(`session ${session}: the kept link to the next hop did not answer a ping; connecting afresh`)
      parked.close()
      return fresh()
    })
  }

  private async send(owner: FrameCaller, next: Next, out: Frame, trailer: ChainTrailer): Promise<boolean> {
    const session = out.session
    let link = this.links.get(session)
    if (link === undefined) {
      link = this.connect(session, next)
      this.links.set(session, link)
    }
    const l = await link
    if (l === undefined) return false
    const bytes = encodeFrame({ ...out, kind: 'forward', trailer: new TextEncoder().encode(JSON.stringify(trailer)) })
    l.request(bytes).then(
      (ack) =>
        ack.kind !== 'ok' &&
        this.host.log?.(`session ${session}: the next hop answered a forwarded step with ${ack.kind}`),
      (error: Error) => {
        const message =
          `the next hop refused forwarded step ${out.step} or is gone (${error.message}); fetch this ` +
          `hop's output and carry the leg`
        this.host.log?.(`session ${session}: ${message}`)
        // the client waits on the successor: told here, it fetches the output and carries the leg itself
        // after this hop's own answer to the step has gone out (a link already closed refuses at once)
        setImmediate(() => this.host.push(owner, errorFrame(session, out.step, { code: 'forward_refused', message })))
      },
    )
    return true
  }
}
