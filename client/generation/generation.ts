import { randomBytes } from 'node:crypto'
import type { HopInput } from '../../dataplane/hop-frames'
import { HopFailure } from '../../dataplane/hop-link'
import { measureAsked, reportLatencies } from '../../dataplane/link-latency'
import { ClientToTracker, callRpc, NeuronError, type Receipt, type SampledToken } from '../../protocol'
import { StreamingDetokenizer } from '../../text/detokenizer'
import type { ModelTokenizer } from '../../text/tokenizer'
import { WAIT_FOR_SESSION_MS, whenSessionFree } from '../free-session'
import { closeHops, type HopOpener, type HopState, renewHops } from '../open-hops'
import { type AuditableHop, picks } from '../step-audits'
import { Failover, resumedRequest } from './failover'
import { hopStats } from './hop-stats'
import { openRoute } from './open-route'
import { forkPlan, type PrefixBook } from './prefix-book'
import type { GeneratedToken, GenerateRequest, GenerationSummary } from './request'
import { openDraft, speculativeTokens } from './speculation'
import { type StepAt, type StepRunner, tokenInput } from './step-runner'
import { cutHistory, sharedPrefix } from './turn-history'

/** What a generation needs of the client that runs it. */
export interface GenerationClient extends HopOpener {
  readonly log: (line: string) => void
  /** The model's tokenizer, used only when its sha256 is the one the model's manifest names. */
  tokenizer(modelId: string): Promise<ModelTokenizer>
  /** Tells the tracker the session is over so the rest of its credit hold is free again (best effort). */
  endSession(session: string): void
  /**
   * Audits the session's picked hops once it is over and `ready` has settled (what they were forwarded is fetched),
   * in the background (step-audits.ts auditHops).
   */
  audit(session: string, hops: readonly AuditableHop[], ready: Promise<void>): void
  /** What this client's ended sessions' hops still hold (prefix-book.ts); absent, every prompt is prefilled whole. */
  readonly prefixes?: PrefixBook | undefined
}

/** The draft a request asked for, loaded and checked against the route model (speculation.ts). */
type Draft = NonNullable<Awaited<ReturnType<typeof openDraft>>>

/**
 * One generation across a route of hosts: the prompt tokenized with the model's own tokenizer, a route asked of the
 * tracker and opened on every hop, then one loop: run a step, confirm its token. A hop that fails is replaced
 * (failover.ts) and the step carries on with the same tokens. Each hop is picked for an audit at the chance its route
 * names; the picked ones are audited once the session is over, every step of theirs in one prefill, off the critical
 * path.
 */
export class Generation {
  private generated: number[] = []
  /** The tokens whose positions the hops hold, in order: a conversation's next turn goes on after them. */
  private readonly fed: number[] = []
  /** Where the next turn's decode starts (a conversation's turn); undefined: step 1 with the prompt. */
  private nextAt: StepAt | undefined
  /** The last step sent: a turn numbers its first step after it. */
  private lastStep = 0
  /** Ended: its hops closed and its session ended at the tracker; a conversation starts a new one. */
  private ended = false
  /** The receipts of this turn's steps (a session's, until a conversation's next turn). */
  private receipts: Receipt[] = []
  /** Hops picked for an audit at the session's end (a hop replaced meanwhile stays, with the steps it ran). */
  private readonly picked = new Set<HopState>()
  /** Hops whose pick was drawn (once each, at its first step: a failover's replacement is drawn when it runs). */
  private readonly drawn = new WeakSet<HopState>()
  private readonly failover: Failover
  private text: StreamingDetokenizer
  private stopAtEog: boolean
  private finishReason: 'stop' | 'length' = 'length'
  private decodeStarted = 0
  /**
   * Each step's receipts handed to `onReceipts` (the app submits them to its tracker), in order, off the steps' path:
   * awaited per step, a tracker across the internet added its round trip to every token. end() waits for them.
   */
  private reported: Promise<void> = Promise.resolve()
  /** The first failure of `onReceipts`: it fails the generation at its next step, as it did awaited. */
  private reportFailed: { readonly error: unknown } | undefined

  private constructor(
    private readonly client: GenerationClient,
    /** The request as its hops were opened with it (the seams' precision, a grammar's end tokens). */
    private request: GenerateRequest,
    private readonly tokenizer: ModelTokenizer,
    private promptTokens: readonly number[],
    /** KV positions each hop holds for the session: the prompt and every token it may generate. */
    private readonly maxTokens: number,
    readonly session: string,
    /** The route's hops and the way steps travel them. */
    private readonly runner: StepRunner,
    /** The draft when the request asked for speculation. */
    private readonly speculating: Draft | undefined,
    /** Latencies to the hosts the tracker asked about, measured meanwhile and reported at the end. */
    private readonly probed: Promise<Map<string, number[]>>,
    /** A conversation's: the session stays open after a turn for the next (continueWith), until close(). */
    private readonly keep = false,
  ) {
    this.failover = new Failover(client, session, maxTokens, (step) => this.collect(step))
    this.text = new StreamingDetokenizer(tokenizer)
    this.stopAtEog = request.stopAtEog ?? true
  }

  /**
   * Tokenizes the prompt, loads the draft if one is asked for, plans the route and opens its hops (waiting while every
   * host that could serve is full); the session is ended at the tracker when that fails.
   */
  static async open(
    client: GenerationClient,
    request: GenerateRequest,
    /** A conversation's session: kept open after the turn, with `positions` reserved for the turns to come. */
    conversation?: { readonly positions: number },
  ): Promise<Generation> {
    // a fork whose cache a host gave up meanwhile (prefix_gone; the book forgot it): planned again whole, anew
    return Generation.openOnce(client, request, conversation).catch((error: unknown) => {
      if (request.session !== undefined || !(error instanceof NeuronError) || error.code !== 'prefix_gone') throw error
      return Generation.openOnce(client, { ...request, reusePrefix: false }, conversation)
    })
  }

  private static async openOnce(
    client: GenerationClient,
    request: GenerateRequest,
    conversation?: { readonly positions: number },
  ): Promise<Generation> {
    const tokenizer = await client.tokenizer(request.modelId)
    // A grammar allows the end of generation only where its text is whole: the last hop is told which tokens end it.
    if (request.sampling?.grammar !== undefined)
      request = { ...request, sampling: { ...request.sampling, endTokens: tokenizer.endTokens } }
    const promptTokens = typeof request.prompt === 'string' ? tokenizer.encode(request.prompt) : [...request.prompt]
    if (promptTokens.length === 0) throw new NeuronError('bad_request', 'the prompt is empty; give at least one token.')
    const maxTokens = Math.max(promptTokens.length + request.maxTokens, conversation?.positions ?? 0)
    const speculating = await openDraft(request, client.tracker, tokenizer, maxTokens)
    const session = request.session ?? randomBytes(16).toString('hex')
    // prefix affinity: an ended session of this client's whose hops still hold the prompt's first tokens
    const reuse = speculating === undefined && request.reusePrefix !== false ? client.prefixes : undefined
    const fork = reuse?.find(request.prefixScope ?? '', request.modelId, promptTokens)
    const plan = {
      ...{ modelId: request.modelId, maxTokens, promptTokens: promptTokens.length, exclude: [], session },
      ...(fork === undefined ? {} : { fork: forkPlan(fork) }),
    }
    const opening = () => openRoute(client, request, plan, maxTokens, fork)
    const {
      route,
      seamed,
      runner,
      forkedAt: at,
    } = await whenSessionFree(
      opening,
      request.waitForSessionMs ?? WAIT_FOR_SESSION_MS,
      request.signal,
      client.log,
    ).catch((error: unknown) => {
      void speculating?.draft.dispose()
      client.endSession(session)
      throw error
    })
    const punched = client.punched
    const probed = measureAsked(route, client.ca, client.tracker, punched && ((hostId) => punched.to(hostId)))
    request.onRoute?.(runner.hops.map((h) => h.hop))
    const generation = new Generation(
      client,
      seamed,
      tokenizer,
      promptTokens,
      maxTokens,
      session,
      runner,
      speculating,
      probed,
      conversation !== undefined && speculating === undefined,
    )
    if (at > 0) {
      // the hops hold the first `at` tokens, copied from the earlier session's cache: step 1 carries the rest
      generation.fed.push(...promptTokens.slice(0, at))
      generation.nextAt = { step: 1, position: at, ids: Int32Array.from(promptTokens.slice(at)) }
    }
    request.onCached?.(at)
    return generation
  }

  /** Streams the tokens; the return value summarises the run. The route is closed and the session ended however. */
  async *run(): AsyncGenerator<GeneratedToken, GenerationSummary> {
    let kept = false
    try {
      if (this.speculating === undefined) yield* this.decode()
      else yield* this.speculate(this.speculating)
      // a conversation's turn that ran to its end keeps the session for the next (an abort or a failure ends it)
      kept = this.keep && this.request.signal?.aborted !== true
    } finally {
      if (kept) await this.reported
      else await this.end()
    }
    // receipts the caller could not take after the last step (its tracker gone): the generation fails as it did
    if (this.reportFailed !== undefined) throw this.reportFailed.error
    return this.summary()
  }

  /** The prompt's step, then a step per token, each confirmed as it comes: audits wait for the session's end. */
  private async *decode(): AsyncGenerator<GeneratedToken, void> {
    let at: StepAt = this.nextAt ?? { step: 1, position: 0, ids: Int32Array.from(this.promptTokens) }
    for (;;) {
      if (this.request.signal?.aborted) return
      const ran = await this.step(at, 0, tokenInput(at.ids))
      this.fed.push(...at.ids)
      this.lastStep = at.step
      if (this.decodeStarted === 0) this.decodeStarted = performance.now()
      this.pick()
      const sampled = ran
      const { token, end } = this.confirm(at, sampled)
      if (token !== undefined) yield token
      if (end) return
      at = { step: at.step + 1, position: at.position + at.ids.length, ids: Int32Array.of(sampled.token) }
    }
  }

  /** Draws each hop's pick for an audit once, at the chance its route names (step-audits.ts picks). */
  private pick(): void {
    for (const h of this.runner.hops) {
      if (this.drawn.has(h)) continue
      this.drawn.add(h)
      if (picks(h.hop)) this.picked.add(h)
    }
  }

  /** A draft's tokens checked by verify steps through the route (speculation.ts), each confirmed as it comes. */
  private async *speculate(speculating: Draft): AsyncGenerator<GeneratedToken, void> {
    for await (const s of speculativeTokens({
      ...speculating,
      prompt: this.promptTokens,
      maxNew: this.request.maxTokens,
      stopAtEog: this.stopAtEog,
      hops: () => this.runner.hops,
      signal: this.request.signal,
      tokenizer: this.tokenizer,
      step: (at: StepAt) => this.step(at, 0, tokenInput(at.ids)),
    })) {
      this.decodeStarted ||= performance.now()
      this.pick()
      const { token, end } = this.confirm(s, s.sampled)
      if (token !== undefined) yield token
      if (end) return
    }
  }

  /** Runs step `at` from hop `from` on, starting with `input`, until it has a token, failing over hops that fail. */
  private async step(at: StepAt, from: number, input: HopInput): Promise<SampledToken> {
    for (;;) {
      // Hops before a failing one did their work: their receipts count even when the step is retried.
      const stepReceipts: Receipt[] = []
      try {
        const sampled = await this.runner.run(from, at, input, stepReceipts)
        await this.collect([...stepReceipts, ...(this.runner.signedReceipts?.() ?? [])])
        return sampled
      } catch (error) {
        await this.collect(stepReceipts)
        if (!(error instanceof HopFailure)) throw error
        ;({ from, pending: input } = await this.recover(error))
      }
    }
  }

  /**
   * Replaces the hop that failed (failover.ts); returns where its step resumes (a liar's step runs again from its
   * replacement on).
   */
  private recover(error: HopFailure): Promise<{ from: number; pending: HopInput }> {
    return this.failover.recover(this.runner, error, resumedRequest(this.request, this.generated))
  }

  /** A step's receipts (or a replay's), kept for the summary and told to the caller before the step's token. */
  private async collect(step: Receipt[]): Promise<void> {
    this.receipts.push(...step)
    if (this.reportFailed !== undefined) throw this.reportFailed.error
    const report = this.request.onReceipts
    if (step.length === 0 || report === undefined) return
    this.reported = this.reported
      .then(() => report(this.session, step))
      .catch((error: unknown) => {
        this.reportFailed ??= { error }
      })
  }

  /**
   * Takes a step's token as generated and gives it with its text; the last token also gives the text still held
   * for an incomplete character. An end-of-generation token ends it: undefined, unless it carries that held text.
   */
  private confirm(at: StepAt, sampled: SampledToken): { token: GeneratedToken | undefined; end: boolean } {
    this.generated.push(sampled.token)
    const top = sampled.top === undefined ? {} : { top: sampled.top }
    const token = { token: sampled.token, logprob: sampled.logprob, ...top, position: at.position + at.ids.length }
    if (this.stopAtEog && this.tokenizer.isEndOfGeneration(sampled.token)) {
      this.finishReason = 'stop'
      const held = this.text.flush()
      return { token: held === '' ? undefined : { ...token, text: held }, end: true }
    }
    const last = this.generated.length >= this.request.maxTokens
    const text = this.text.push(sampled.token)
    return { token: { ...token, text: last ? text + this.text.flush() : text }, end: last }
  }

  /** A conversation's end: closes its session (as a turn's end does for a plain generation). */
  async close(): Promise<void> {
    if (!this.ended) await this.end()
  }

  /**
   * Whether `request` (its prompt `tokens`) can go on in this session (kept, open, same model, no draft, within its
   * positions): the tokens share a first token at least with those its hops hold, and add some. Where they part (an
   * answer re-tokenized otherwise than it was generated, an edit) the hops roll back there, where the family can.
   */
  continues(request: GenerateRequest, tokens: readonly number[]): boolean {
    const shared = sharedPrefix(this.fed, tokens)
    return (
      this.keep &&
      !this.ended &&
      request.modelId === this.request.modelId &&
      request.draft === undefined &&
      shared > 0 &&
      tokens.length > shared &&
      tokens.length + request.maxTokens <= this.maxTokens
    )
  }

  /**
   * The next turn of a conversation (continues() said it can): the tracker tickets it (route.turn) and each hop takes
   * the ticket on the open session, then run() steps only the tokens after those the hops hold.
   */
  async continueWith(request: GenerateRequest, tokens: readonly number[]): Promise<void> {
    const shared = sharedPrefix(this.fed, tokens)
    const turn = { step: this.lastStep + 1, position: shared, tokens: tokens.length - shared }
    const hops = this.runner.hops
    const { tickets } = await callRpc(this.client.tracker, ClientToTracker, 'route.turn', {
      session: this.session,
      turn,
      hops: hops.map((h) => ({ hostId: h.hop.hostId, blocks: h.hop.blocks })),
    })
    // a grammar allows the end only where its text is whole, as at the session's open
    const sampling =
      request.sampling?.grammar === undefined
        ? request.sampling
        : { ...request.sampling, endTokens: this.tokenizer.endTokens }
    this.request = {
      ...request,
      hiddenDtype: this.request.hiddenDtype,
      ...(sampling === undefined ? {} : { sampling }),
    }
    await renewHops(this.client, hops, this.session, this.request, this.maxTokens, tickets)
    // what the hops roll back past is no longer their history: a failover replays, and an audit re-runs, the rest
    if (shared < this.fed.length) for (const h of hops) cutHistory(h, shared)
    this.fed.length = shared
    this.promptTokens = tokens
    this.nextAt = { step: turn.step, position: turn.position, ids: Int32Array.from(tokens.slice(turn.position)) }
    this.generated = []
    this.receipts = []
    this.finishReason = 'length'
    this.decodeStarted = 0
    this.text = new StreamingDetokenizer(this.tokenizer)
    this.stopAtEog = request.stopAtEog ?? true
  }

  /** Frees the draft, closes the session on every hop and at the tracker, and reports the hops' latencies. */
  private async end(): Promise<void> {
    this.ended = true
    // the hops keep its cache a while (open, then closed) for this client's next session that begins the same way
    const { prefixScope, modelId } = this.request
    this.client.prefixes?.record(this.session, prefixScope ?? '', modelId, this.fed, this.runner.hops)
    await this.speculating?.draft.dispose()
    // the receipts still being handed on (forwarded steps' once countersigned), before the session ends at the tracker
    await this.collect((await this.runner.allSignedReceipts?.()) ?? []).catch(() => {})
    await this.reported
    const picked = [...this.picked]
    // What the client never saw of the picked hops (forwarded host to host) is fetched while their sessions are open:
    // after the answer is out (a fetch per step crosses the internet), then the sessions close and the audit is asked.
    const closed = (async () => {
      if (picked.length > 0) await this.runner.readyForAudit(picked, this.client.log)
      await closeHops(this.runner.hops, this.session, this.client.idleLinks)
      this.client.endSession(this.session)
    })()
    if (picked.length > 0) this.client.audit(this.session, picked, closed)
    else await closed
    reportLatencies(
      this.client.tracker,
      this.runner.hops.map((h) => ({ hostId: h.hop.hostId, roundTripsMs: h.link.roundTripsMs })),
      await this.probed,
      this.client.log,
    )
  }

  private summary(): GenerationSummary {
    const { generated, speculating } = this
    const decodeSeconds = (performance.now() - this.decodeStarted) / 1000
    return {
      promptTokens: this.promptTokens.length,
      cachedTokens: this.nextAt?.position ?? 0,
      completionTokens: generated.length,
      finishReason: this.finishReason,
      route: hopStats(this.runner.hops),
      decodeTokensPerSecond: generated.length > 1 ? (generated.length - 1) / decodeSeconds : 0,
      failovers: this.failover.replaced,
      session: this.session,
      receipts: this.receipts,
      ...(speculating === undefined ? {} : { speculation: speculating.stats }),
    }
  }
}
