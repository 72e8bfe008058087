import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { TlsCertificate } from '../../dataplane/tls-trust'
import { publicKeyObject } from '../../identity/keys'
import { payloadSha256 } from '../../identity/tickets'
import { ShardRuntimeError } from '../../native'
import {
  decodeFrame,
  encodeFrame,
  errorFrame,
  FLAG_NO_SAMPLE,
  FLAG_SIDE,
  type Frame,
  jsonFrame,
  MAX_FRAME_BYTES,
  NeuronError,
  OpenSession,
  type Receipt,
  type ReceiptBody,
  readJson,
  receiptMessage,
  type SampledToken,
  type SeamFacts,
  type Ticket,
  toWireError,
} from '../../protocol'
import type { TokenTexts } from '../grammar/constraint'
import { onceTokenTexts } from '../grammar/token-texts'
import type { DialBackProver } from '../network/dial-back-answer'
import { SerialQueue } from '../serial-queue'
import {
  type AdmissionLimits,
  admissionLimits,
  admit,
  checkReplayTicket,
  checkStepTokens,
  squattedSession,
  type TicketTerms,
} from './admission'
import { DataPlaneListener } from './data-plane-listener'
import { chainSigned, chainTrailer, Forwarder } from './forwarding'
import { LastHopSampler } from './last-hop-sampler'
import { type SeamInput, seamInput, seamSide } from './seam-io'
import { type FrameCaller, type ServedSession, SessionsSeen } from './served-session'
import type { ServingRuntime } from './serving-runtime'
import { clientSigned, type SignedStep } from './signed-step'
import { StepBatcher } from './step-batcher'
import { StepOrder } from './step-order'
import { checkVerify, isVerify, verifiedTokens } from './verify'

export interface ShardServerOptions {
  readonly modelId: string
  readonly blocks: readonly [number, number]
  readonly embed: boolean
  readonly head: boolean
  readonly nEmbd: number
  /** The manifest's seams (what crosses each boundary); without them a seam is nEmbd values alone. */
  readonly seams?: SeamFacts
  readonly maxSessions: number
  /** Largest frame accepted, bytes; larger ones get a `frame_too_large` error. */
  readonly maxFrameBytes?: number
  /** A session nobody has used for this long is closed and its KV cache freed. */
  readonly idleSessionMs?: number
  readonly log?: (line: string) => void
  /** Signs a receipt for every step it serves (the host's NodeIdentity); without it, answers carry none. */
  readonly signer?: ReceiptSigner
  /** Told every receipt signed: the host hands them to the tracker itself, so a client that vanishes still pays. */
  readonly onReceipt?: (receipt: Receipt) => void
  /**
   * Told when a session closes: the tracker counts the sessions it routed here as open until it hears the host's count.
   */
  readonly onSessionFreed?: () => void
  /**
   * What an open's ticket must name: signed by the tracker's key
   * (undefined until the tracker said it), for this host and manifest.
   */
  readonly tickets: Omit<TicketTerms, 'modelId'>
  /** KV capacity per session, the KV budget over all sessions and sessions per client key (see admissionLimits). */
  readonly limits?: Partial<Omit<AdmissionLimits, 'maxSessions'>>
  /** A full host gives up a squatted session unstepped this long to a waiting key (default EVICT_IDLE_MS). */
  readonly evictIdleMs?: number
  /** A session opened and never stepped is closed after this long (default 30 s): an open alone holds a slot. */
  readonly unsteppedSessionMs?: number
  /** WebSocket connections at once (default 256), and frames one connection may have in flight (default 8). */
  readonly maxConnections?: number
  readonly maxInFlightPerConnection?: number
  /** Signs the tracker's dial-back at DIAL_BACK_PATH on the data-plane port (absent: it answers 503). */
  readonly dialBack?: DialBackProver
  /**
   * An artifact of the model (last hop only): its vocabulary is loaded on
   * the first session with a grammar; without it grammars are refused.
   */
  readonly vocabularyFrom?: string | undefined
}

export type { FrameCaller } from './served-session'

/** The part of a NodeIdentity that signs receipts. */
export interface ReceiptSigner {
  readonly id: string
  sign(message: string): string
}

const NO_SESSION = '0'.repeat(32)

export const DEFAULT_MAX_FRAME_BYTES = MAX_FRAME_BYTES

/**
 * Serves one loaded block range to clients: binary frames in, frames out, over WebSocket or the
 * tracker's relay. Every malformed or failing frame gets an error frame; the server keeps serving.
 */
export class ShardServer {
  private readonly sessions = new Map<string, ServedSession>()
  private readonly seen = new SessionsSeen()
  private listener: DataPlaneListener | undefined
  private draining = false
  private readonly reaper: NodeJS.Timeout
  /** Compute time per block of the last single-token steps, for the measured speed. */
  private readonly recentMsPerBlock: number[] = []
  private readonly limits: AdmissionLimits
  /** The vocabulary's token texts, loaded on the first grammar (last hop only). */
  private readonly tokenTexts: (() => Promise<TokenTexts>) | undefined
  /** Runs the ready steps of all sessions in one graph per tick (step-batcher.ts). */
  readonly batcher: StepBatcher
  /** Hop-to-hop forwarding (forwarding.ts). */
  private readonly forwarder: Forwarder
  /**
   * Takes WebSocket upgrades on other paths of the data-plane port (a volunteer relay's); true when it took this one.
   */
  upgrades: ((req: IncomingMessage, socket: Socket, head: Buffer) => boolean) | undefined

  constructor(
    private readonly runtime: ServingRuntime,
    private readonly options: ShardServerOptions,
  ) {
    this.limits = admissionLimits(options.maxSessions, options.limits)
    this.tokenTexts =
      options.vocabularyFrom === undefined ? undefined : onceTokenTexts(options.modelId, options.vocabularyFrom)
    this.batcher = new StepBatcher(runtime)
    const push = (caller: FrameCaller, bytes: Uint8Array) => this.listener?.push(caller, bytes) ?? false
    this.forwarder = new Forwarder({ push, log: options.log, signer: options.signer, onReceipt: options.onReceipt })
    this.reaper = setInterval(
      () => this.reapIdle(Date.now()),
      Math.min(10_000, Math.max(50, (options.unsteppedSessionMs ?? 30_000) / 4)),
    )
    this.reaper.unref()
  }

  private get seamFacts(): SeamFacts {
    return this.options.seams ?? { nLayer: this.options.blocks[1], nEmbd: this.options.nEmbd }
  }

  /** Sessions held of `maxSessions` (the tracker's probes, in slots of their own, are not counted). */
  get activeSessions(): number {
    let n = 0
    for (const s of this.sessions.values()) if (!s.probe) n++
    return n
  }

  /** Ticketed sessions open now or opened since the last call, for the heartbeat (undefined past its bound). */
  sessionsSeen(): string[] | undefined {
    return this.seen.take([...this.sessions].filter(([, s]) => !s.probe).map(([id]) => id))
  }

  /** Median compute time per block of recent single-token steps, ms; undefined before any. */
  get msPerBlock(): number | undefined {
    if (this.recentMsPerBlock.length === 0) return undefined
    const sorted = [...this.recentMsPerBlock].sort((a, b) => a - b)
    return sorted[Math.floor(sorted.length / 2)]
  }

  /** Serves clients at the returned endpoint: wss:// when given a certificate, else ws://. */
  async listen(port = 0, host = '127.0.0.1', tls?: TlsCertificate): Promise<string> {
    const { maxConnections, maxInFlightPerConnection, dialBack, log } = this.options
    this.listener = await DataPlaneListener.listen(port, host, tls, {
      handle: (bytes, caller) => this.handle(bytes, caller),
      upgrades: (req, socket, head) => this.upgrades?.(req, socket, head) === true,
      maxFrameBytes: this.options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
      ...{ maxConnections, maxInFlightPerConnection, dialBack, log },
    })
    return this.listener.endpoint
  }

  /** One frame in from `caller`, one frame out; never throws. */
  async handle(bytes: Uint8Array, caller: FrameCaller): Promise<Uint8Array> {
    const max = this.options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES
    if (bytes.byteLength > max) {
      return errorFrame(NO_SESSION, 0, {
        code: 'frame_too_large',
        message: `a frame of ${bytes.byteLength} bytes exceeds this host's ${max}; send the prompt in smaller chunks.`,
        details: { bytes: bytes.byteLength, max },
      })
    }
    let frame: Frame
    try {
      frame = decodeFrame(bytes)
    } catch (error) {
      return errorFrame(NO_SESSION, 0, toWireError(error))
    }
    try {
      switch (frame.kind) {
        case 'open':
          return this.open(frame, caller)
        case 'forward':
          return await this.forward(frame, caller)
        case 'fetch':
          return this.forwarder.fetch(frame, this.owned(frame.session, caller))
        case 'sign':
          return this.forwarder.countersign(frame, this.owned(frame.session, caller))
        case 'close':
          this.owned(frame.session, caller)
          this.closeSession(frame.session)
          return jsonFrame('ok', frame.session, frame.step, {})
        default:
          throw new NeuronError('bad_frame', `a host accepts open, forward and close frames, not ${frame.kind}`)
      }
    } catch (error) {
      return errorFrame(frame.session, frame.step, wire(error))
    }
  }

  /** Stops taking new sessions; resolves when the open ones have closed or `timeoutMs` passed. */
  async drain(timeoutMs: number): Promise<void> {
    this.draining = true
    const deadline = Date.now() + timeoutMs
    while (this.sessions.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  }

  async close(): Promise<void> {
    clearInterval(this.reaper)
    for (const id of [...this.sessions.keys()]) this.closeSession(id)
    await this.listener?.close()
  }

  private open(frame: Frame, caller: FrameCaller): Uint8Array {
    const request = readJson(frame, OpenSession)
    const { modelId, blocks } = this.options
    if (this.draining)
      throw new NeuronError(
        'draining',
        'this host is draining and takes no new sessions; ask the tracker for another route.',
      )
    if (request.modelId !== modelId)
      throw new NeuronError('wrong_model', `this host serves ${modelId}, not ${request.modelId}.`)
    // A malformed grammar is refused before anything is admitted or evicted.
    const sampling = LastHopSampler.open(request.sampling, this.tokenTexts)
    const ticket = this.admitOrEvict(frame.session, request)
    // A route may use part of this host's span: the session then runs only its blocks.
    if (request.blocks[0] < blocks[0] || request.blocks[1] > blocks[1]) {
      throw new NeuronError(
        'range_not_served',
        `this host serves blocks [${blocks[0]}, ${blocks[1]}); a session for [${request.blocks[0]}, ` +
          `${request.blocks[1]}) must lie inside it.`,
        { served: [...blocks], requested: request.blocks },
      )
    }
    if (this.sessions.has(frame.session))
      throw new NeuronError('session_exists', `session ${frame.session} is already open here.`)
    const runtime = this.runtime.openSession({
      maxTokens: request.maxTokens,
      blocks: [request.blocks[0], request.blocks[1]],
      clientKey: ticket.clientKey,
    })
    this.sessions.set(frame.session, {
      runtime,
      open: request,
      owner: caller,
      clientKey: ticket.clientKey,
      clientKeyObject: publicKeyObject(ticket.clientKey),
      order: new StepOrder(),
      probe: ticket.probe === true,
      ticket,
      stepped: false,
      sampling,
      lastUsed: Date.now(),
      steps: new SerialQueue(),
    })
    if (ticket.probe !== true) this.seen.opened(frame.session)
    return jsonFrame('ok', frame.session, frame.step, {})
  }

  /**
   * Admits the open; refused as full, gives up the session a key squats here (admission's squattedSession) and admits
   * it then. The ticket is verified before any limit is checked, so only a ticketed key can make a host evict.
   */
  private admitOrEvict(session: string, request: OpenSession): Ticket {
    const terms = { ...this.options.tickets, modelId: this.options.modelId }
    try {
      return admit(session, request, terms, this.limits, this.sessions.values())
    } catch (refusal) {
      const opener = request.ticket?.clientKey ?? ''
      const squatted = squattedSession(refusal, opener, this.sessions, Date.now(), this.options.evictIdleMs)
      if (squatted === undefined) throw refusal
      this.options.log?.(
        `session ${squatted} given up: its key holds the most sessions here and another key is waiting`,
      )
      this.closeSession(squatted)
      return admit(session, request, terms, this.limits, this.sessions.values())
    }
  }

  /** The session `id` if `caller` opened it; `not_your_session` when another caller did. */
  private owned(id: string, caller: FrameCaller): ServedSession | undefined {
    const served = this.sessions.get(id)
    if (served !== undefined && served.owner !== caller)
      throw new NeuronError(
        'not_your_session',
        `session ${id} was opened by another connection; open your own session with your own ticket.`,
      )
    return served
  }

  private forward(frame: Frame, caller: FrameCaller): Promise<Uint8Array> {
    // from the predecessor hop (hop-to-hop forwarding), not the session's client: its capability stands for the owner
    const chain = chainTrailer(frame)
    const served = chain === undefined ? this.owned(frame.session, caller) : this.sessions.get(frame.session)
    if (served === undefined)
      throw new NeuronError(
        'unknown_session',
        `no open session ${frame.session} on this host; open it first (it may have idled out).`,
        {
          session: frame.session,
        },
      )
    const input = seamInput(frame, this.seamFacts, served.runtime.blocks[0], served.runtime.takesTokens)
    if (frame.tokens === 0) throw new NeuronError('bad_frame', 'a forward frame carries at least one token.')
    checkStepTokens(served.ticket, frame.step, frame.tokens, frame.flags)
    checkVerify(frame, this.runtime.canBatch === true, served.sampling)
    checkReplayTicket(served.ticket, frame.step, frame.position, frame.tokens)
    const signed = chain === undefined ? clientSigned(served, frame) : chainSigned(served, frame, chain)
    served.order.take(frame.step, frame.position, frame.tokens, frame.flags)
    served.lastUsed = Date.now()
    served.stepped = true
    return served.steps
      .run(() => this.compute(served, frame, input, signed))
      .then((answer) => this.forwarder.after(served, frame, chain, answer))
  }

  private async compute(
    served: ServedSession,
    frame: Frame,
    input: SeamInput,
    signed: SignedStep,
  ): Promise<Uint8Array> {
    const started = performance.now()
    const output = await this.batcher.forward(served.runtime, input.values, {
      positions: frame.position,
      ...(isVerify(frame) ? { allLogits: true } : {}),
      hiddenType: served.open.hiddenDtype,
      ...(served.runtime.takesTokens || input.tokenIds === undefined ? {} : { tokenIds: input.tokenIds }),
      ...(input.indices === undefined ? {} : { indices: input.indices }),
    })
    const computeMs = performance.now() - started
    if (frame.tokens === 1) {
      const [from, to] = served.runtime.blocks
      this.recentMsPerBlock.push(computeMs / (to - from))
      if (this.recentMsPerBlock.length > 64) this.recentMsPerBlock.shift()
    }
    if (output.kind === 'logits') {
      if (frame.flags & FLAG_NO_SAMPLE) return this.seal(served, frame, signed, jsonAnswer('ok', frame, {}))
      if (isVerify(frame))
        return this.seal(served, frame, signed, jsonAnswer('token', frame, verifiedTokens(output, computeMs)))
      const sampled = await served.sampling.sample(served.runtime, frame.position + frame.tokens)
      const body: SampledToken = {
        token: sampled.token,
        logprob: sampled.logprob,
        computeMs,
        ...(sampled.top === undefined ? {} : { top: sampled.top }),
      }
      return this.seal(served, frame, signed, jsonAnswer('token', frame, body))
    }
    const values = new Uint8Array(output.data.buffer, output.data.byteOffset, output.data.byteLength)
    const side = seamSide(this.seamFacts, served.runtime.blocks[1], output.rows, input, output.indices)
    return this.seal(served, frame, signed, {
      kind: 'hidden',
      dtype: output.dtype,
      flags: side === undefined ? 0 : FLAG_SIDE,
      session: frame.session,
      step: frame.step,
      position: frame.position,
      tokens: output.rows,
      width: output.cols,
      payload: side === undefined ? values : new Uint8Array(Buffer.concat([values, side])),
    })
  }

  /** Encodes an answer with this host's signed receipt for the step, the client's signature in it, as its trailer. */
  private seal(served: ServedSession, request: Frame, signed: SignedStep, answer: Frame): Uint8Array {
    const signer = this.options.signer
    if (signer === undefined) return encodeFrame(answer)
    const body: ReceiptBody = {
      session: request.session,
      step: request.step,
      hostId: signer.id,
      // What this step actually ran: a session may use part of the host's span.
      blocks: [served.runtime.blocks[0], served.runtime.blocks[1]],
      tokens: request.tokens,
      position: request.position,
      modelId: served.ticket.modelId,
      price: served.ticket.price,
      tracker: served.ticket.trackerKey,
      input: signed.input,
      output: payloadSha256(answer.payload),
      ...(signed.client === undefined ? {} : { client: signed.client }),
    }
    const receipt = { ...body, signature: signer.sign(receiptMessage(body)) }
    // a forwarded step's receipt is handed in once its client signs it (forwarding.ts's countersign)
    if (signed.client !== undefined) this.options.onReceipt?.(receipt)
    return encodeFrame({ ...answer, trailer: new TextEncoder().encode(JSON.stringify(receipt)) })
  }

  private closeSession(id: string): void {
    const served = this.sessions.get(id)
    if (served === undefined) return
    this.sessions.delete(id)
    this.forwarder.forget(id)
    this.options.onSessionFreed?.()
    // Close after any step still running on it.
    void served.steps.run(() => served.runtime.close())
  }

  private reapIdle(now: number): void {
    const idle = this.options.idleSessionMs ?? 10 * 60_000
    const unstepped = this.options.unsteppedSessionMs ?? 30_000
    for (const [id, s] of this.sessions) {
      if (now - s.lastUsed > (s.stepped ? idle : unstepped)) {
        this.options.log?.(`session ${id} idle for ${Math.round((now - s.lastUsed) / 1000)} s; closed`)
        this.closeSession(id)
      }
    }
  }
}

/** An error answer to a frame not handled, addressed to its session and step when its header parses. */
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

/** Runtime errors keep their code and numbers on the wire. */
function wire(error: unknown) {
  if (error instanceof ShardRuntimeError)
    return { code: error.code.toLowerCase(), message: error.message, details: { ...error.details } }
  return toWireError(error)
}
