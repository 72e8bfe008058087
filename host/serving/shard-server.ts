import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { TlsCertificate } from '../../dataplane/tls-trust'
import { publicKeyObject } from '../../identity/keys'
import { ShardRuntimeError } from '../../native'
import {
  decodeFrame,
  encodeFrame,
  errorFrame,
  type Frame,
  jsonFrame,
  MAX_FRAME_BYTES,
  MAX_PING_BYTES,
  NeuronError,
  NO_SESSION,
  OpenSession,
  readJson,
  type SeamFacts,
  type Ticket,
  toWireError,
} from '../../protocol'
import type { TokenTexts } from '../grammar/constraint'
import { onceTokenTexts } from '../grammar/token-texts'
import { SerialQueue } from '../serial-queue'
import { type AdmissionLimits, admissionLimits, admit, EVICT_IDLE_MS, squattedSession } from './admission'
import { DataPlaneListener } from './data-plane-listener'
import { Forwarder } from './forwarding'
import { LastHopSampler } from './last-hop-sampler'
import { PrefixCache } from './prefix-cache'
import { renewSession, sameOpenAgain } from './renew'
import { type FrameCaller, type ServedSession, SessionsSeen, upstreamWaitMs } from './served-session'
import type { ServingRuntime } from './serving-runtime'
import type { ShardServerOptions } from './shard-server-options'
import { acceptStep, type StepGate } from './step/accept'
import { StepCompute } from './step/compute'
import { keep, keptAnswer } from './step/kept-answer'
import { seal } from './step/seal'
import { StepOrder } from './step/step-order'
import { StepBatcher } from './step-batcher'

export type { FrameCaller } from './served-session'
export type { ShardServerOptions } from './shard-server-options'

/** A session stepped and unused this long while its host drains is between a conversation's turns: it is closed. */
const DRAIN_IDLE_MS = 1_000
/** Idle sessions one open may make a host give up (a large open needs several small ones' room). */
const MAX_EVICTIONS_PER_OPEN = 8

export const DEFAULT_MAX_FRAME_BYTES = MAX_FRAME_BYTES

/**
 * Serves one loaded block range to clients: binary frames in, frames out, over WebSocket or the
 * tracker's relay. Every malformed or failing frame gets an error frame; the server keeps serving.
 */
export class ShardServer {
  private readonly sessions = new Map<string, ServedSession>()
  /** Closed sessions' caches, kept for sessions of the same key that start from them (prefix-cache.ts). */
  private readonly prefixes: PrefixCache
  private readonly seen = new SessionsSeen()
  private listener: DataPlaneListener | undefined
  private draining = false
  private readonly reaper: NodeJS.Timeout
  private readonly limits: AdmissionLimits
  /** The vocabulary's token texts, loaded on the first grammar (last hop only). */
  private readonly tokenTexts: (() => Promise<TokenTexts>) | undefined
  /** Runs the ready steps of all sessions in one graph per tick (step-batcher.ts). */
  readonly batcher: StepBatcher
  /** Hop-to-hop forwarding (forwarding.ts). */
  private readonly forwarder: Forwarder
  /** A step's compute and its answer (step/compute.ts). */
  private readonly compute: StepCompute
  /** What accepting a step asks of this server (step/accept.ts). */
  private readonly gate: StepGate
  /**
   * Takes WebSocket upgrades on other paths of the data-plane port (a volunteer relay's); true when it took this one.
   */
  upgrades: ((req: IncomingMessage, socket: Socket, head: Buffer) => boolean) | undefined

  constructor(
    private readonly runtime: ServingRuntime,
    private readonly options: ShardServerOptions,
  ) {
    this.limits = admissionLimits(options.maxSessions, options.limits)
    this.prefixes = new PrefixCache(options.prefixKeepMs)
    this.tokenTexts =
      options.vocabularyFrom === undefined ? undefined : onceTokenTexts(options.modelId, options.vocabularyFrom)
    this.batcher = new StepBatcher(
      runtime,
      options.prefillChunkTokens === undefined ? {} : { prefillChunkTokens: options.prefillChunkTokens },
    )
    this.compute = new StepCompute(this.batcher, this.seamFacts)
    this.gate = {
      owned: (id, caller) => this.owned(id, caller),
      session: (id) => this.sessions.get(id),
      seams: this.seamFacts,
      get rollsBackDrafts() {
        return runtime.rollsBackDrafts === true
      },
      owedCountersign: (session, step) => this.forwarder.owedCountersign(session, step),
    }
    // a caller on the data-plane port, else on a punched channel (options.push)
    const push = (caller: FrameCaller, bytes: Uint8Array) =>
      this.listener?.push(caller, bytes) === true || options.push?.(caller, bytes) === true
    this.forwarder = new Forwarder({
      ...{ push, log: options.log, signer: options.signer, onReceipt: options.onReceipt },
      punchTo: options.punchTo,
    })
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

  /**
   * Sessions idle for the eviction grace (opened and never stepped, or a conversation between turns): a full host gives
   * one up to a waiting key (admission's squattedSession), and the heartbeat says how many, so the tracker routes a
   * waiting key here.
   */
  idleOpens(now: number): number {
    const grace = this.options.evictIdleMs ?? EVICT_IDLE_MS
    let n = 0
    for (const s of this.sessions.values()) if (!s.probe && !s.steps.busy && now - s.lastUsed >= grace) n++
    return n
  }

  /** Ticketed sessions open now or opened since the last call, for the heartbeat (undefined past its bound). */
  sessionsSeen(): string[] | undefined {
    return this.seen.take([...this.sessions].filter(([, s]) => !s.probe).map(([id]) => id))
  }

  /** Positions its blocks have run over every session, and of them the prompts': a prefix cache saves what it skips. */
  get computedPositions(): { all: number; prompts: number } {
    return { all: this.compute.positions, prompts: this.compute.prefilled }
  }

  /** Median compute time per block of recent single-token steps, ms; undefined before any. */
  get msPerBlock(): number | undefined {
    return this.compute.msPerBlock
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
        case 'ping':
          return pong(frame)
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
          this.closeSession(frame.session, true)
          return jsonFrame('ok', frame.session, frame.step, {})
        default:
          throw new NeuronError('bad_frame', `a host accepts open, forward, close and ping frames, not ${frame.kind}`)
      }
    } catch (error) {
      return errorFrame(frame.session, frame.step, wire(error))
    }
  }

  /** Stops taking new sessions; resolves when the open ones have closed or `timeoutMs` passed. */
  async drain(timeoutMs: number): Promise<void> {
    this.draining = true
    this.prefixes.clear()
    const deadline = Date.now() + timeoutMs
    while (this.sessions.size > 0 && Date.now() < deadline) {
      // a conversation between its turns holds no answer in flight: closed, its next turn starts anew elsewhere
      for (const [id, s] of this.sessions)
        if (s.stepped && !s.steps.busy && Date.now() - s.lastUsed >= DRAIN_IDLE_MS) this.closeSession(id)
      await new Promise((r) => setTimeout(r, 50))
    }
  }

  async close(): Promise<void> {
    clearInterval(this.reaper)
    for (const id of [...this.sessions.keys()]) this.closeSession(id)
    this.prefixes.clear()
    this.forwarder.close()
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
    const served = this.sessions.get(frame.session)
    if (served !== undefined && sameOpenAgain(served, request, caller)) {
      this.options.log?.(`session ${frame.session} opened again on another connection before its first step`)
      served.owner = caller
      return jsonFrame('ok', frame.session, frame.step, {})
    }
    if (served !== undefined) {
      const terms = { ...this.options.tickets, modelId }
      const ticket = renewSession(frame.session, served, caller, request, terms, this.runtime.canRollBack === true)
      // the turn's sampling (a last hop's): each turn of a conversation draws with its own, as a new session would
      if (request.sampling !== undefined) served.sampling = LastHopSampler.open(request.sampling, this.tokenTexts)
      served.ticket = ticket
      served.lastUsed = Date.now()
      return jsonFrame('ok', frame.session, frame.step, {})
    }
    // a turn goes on only where its session is (a failover's replacement, on a replay ticket, rebuilds it)
    if (request.ticket?.turn !== undefined && request.ticket.replay === undefined)
      throw new NeuronError(
        'unknown_session',
        `session ${frame.session} is no longer open here (given up while idle, or closed); start the conversation's ` +
          `turn anew on a new session.`,
        { session: frame.session },
      )
    // A malformed grammar is refused before anything is admitted or evicted.
    const sampling = LastHopSampler.open(request.sampling, this.tokenTexts)
    // a fork's cache is looked up first: a refused one gives nothing up
    const fork = request.ticket?.fork
    if (request.ticket !== undefined && fork !== undefined)
      this.prefixes.source(request.ticket, request, this.sessions.get(fork.session))
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
    const runtime = this.runtime.openSession({
      maxTokens: request.maxTokens,
      blocks: [request.blocks[0], request.blocks[1]],
      clientKey: ticket.clientKey,
    })
    try {
      if (ticket.fork !== undefined)
        this.prefixes.start(runtime, ticket, request, this.sessions.get(ticket.fork.session), Date.now())
    } catch (error) {
      runtime.close()
      throw error
    }
    this.sessions.set(frame.session, {
      runtime,
      open: request,
      owner: caller,
      clientKey: ticket.clientKey,
      clientKeyObject: publicKeyObject(ticket.clientKey),
      order: new StepOrder(ticket.fork?.position),
      probe: ticket.probe === true,
      ticket,
      stepped: false,
      sampling,
      lastUsed: Date.now(),
      steps: new SerialQueue(),
    })
    if (ticket.probe !== true) this.seen.opened(frame.session)
    this.forwarder.opened(frame.session, request.forwarding?.next)
    return jsonFrame('ok', frame.session, frame.step, {})
  }

  /**
   * Admits the open; refused as full, gives up the session a key squats here (admission's squattedSession) and admits
   * it then. The ticket is verified before any limit is checked, so only a ticketed key can make a host evict.
   */
  private admitOrEvict(session: string, request: OpenSession): Ticket {
    const terms = { ...this.options.tickets, modelId: this.options.modelId }
    // kept caches give way first: the budget less what the open sessions and this one reserve is theirs (a probe
    // takes a slot of its own, past the budget)
    let reserved = request.ticket?.probe === true ? 0 : request.maxTokens
    for (const s of this.sessions.values()) if (!s.probe) reserved += s.open.maxTokens
    this.prefixes.free(this.limits.kvBudgetTokens - reserved, request.ticket?.fork?.session)
    // as many idle sessions as the open needs room for (a kept conversation's cache is a cache), one at a time
    for (let given = 0; ; given++) {
      try {
        return admit(session, request, terms, this.limits, this.sessions.values())
      } catch (refusal) {
        const opener = request.ticket?.clientKey ?? ''
        const squatted =
          given < MAX_EVICTIONS_PER_OPEN
            ? squattedSession(refusal, opener, this.sessions, Date.now(), this.options.evictIdleMs)
            : undefined
        if (squatted === undefined) throw refusal
        this.options.log?.(`session ${squatted} given up: idle here while another key is waiting for room`)
        this.closeSession(squatted)
      }
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

  /** A step walks accept (every check, in order) → compute → seal (the signed receipt), then goes on (forwarding). */
  private forward(frame: Frame, caller: FrameCaller): Promise<Uint8Array> {
    const step = acceptStep(frame, caller, this.gate)
    const { served, chain } = step
    served.lastUsed = Date.now()
    served.stepped = true
    const { signer, onReceipt } = this.options
    return served.steps
      .run(async () => keptAnswer(step) ?? keep(step, seal(step, await this.compute.run(step), signer, onReceipt)))
      .then((answer) => {
        // idle from the answer on: a long prefill is not time spent unused
        served.lastUsed = Date.now()
        return this.forwarder.after(served, frame, chain, answer)
      })
  }

  /** `keep`: its client closed it, and its cache may stay a while for that client's next session (prefix-cache.ts). */
  private closeSession(id: string, keep = false): void {
    const served = this.sessions.get(id)
    if (served === undefined) return
    this.sessions.delete(id)
    this.forwarder.forget(id)
    this.batcher.forget(served.runtime)
    this.options.onSessionFreed?.()
    if (keep && !this.draining && this.prefixes.keep(id, served, Date.now())) return
    // Close after any step still running on it.
    void served.steps.run(() => served.runtime.close())
  }

  private reapIdle(now: number): void {
    const idle = this.options.idleSessionMs ?? 10 * 60_000
    const unstepped = this.options.unsteppedSessionMs ?? 30_000
    this.prefixes.sweep(now)
    for (const [id, s] of this.sessions) {
      // an open not yet stepped may be waiting for its prompt from the hops before it
      if (now - s.lastUsed > (s.stepped ? idle : unstepped + upstreamWaitMs(s.ticket, this.msPerBlock))) {
        this.options.log?.(`session ${id} idle for ${Math.round((now - s.lastUsed) / 1000)} s; closed`)
        this.closeSession(id)
      }
    }
  }
}

/** Runtime errors keep their code and numbers on the wire. */
function wire(error: unknown) {
  if (error instanceof ShardRuntimeError)
    return { code: error.code.toLowerCase(), message: error.message, details: { ...error.details } }
  return toWireError(error)
}

/** A ping answered at once, on whatever path it came (link-latency.ts's FramePinger): same session, step, payload. */
function pong(frame: Frame): Uint8Array {
  if (frame.payload.byteLength > MAX_PING_BYTES || frame.trailer !== undefined)
    throw new NeuronError('bad_frame', `a ping carries at most ${MAX_PING_BYTES} payload bytes and no trailer`)
  return encodeFrame({ ...frame, kind: 'pong' })
}
