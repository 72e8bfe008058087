import { randomBytes } from 'node:crypto'
import type { HopInput } from '../dataplane/hop-frames'
import { HopFailure } from '../dataplane/hop-link'
import { measureHosts, reportLatencies } from '../dataplane/link-latency'
import type { TrustedCa } from '../dataplane/tls-trust'
import type { TrackerConnectionOptions } from '../dataplane/tracker-connection'
import { openTrackerChannel, type TrackerChannel } from '../dataplane/tracker-link'
import type { NodeIdentity } from '../identity/keys'
import {
  ClientToTracker,
  callRpc,
  MAX_AUDITS_IN_FLIGHT,
  NeuronError,
  REPLAY_STEP_BASE,
  type Receipt,
  type SampledToken,
} from '../protocol'
import { StreamingDetokenizer } from '../text/detokenizer'
import { checkTokenizer, ModelTokenizer } from '../text/tokenizer'
import { WAIT_FOR_SESSION_MS, whenSessionFree } from './free-session'
import type { GeneratedToken, GenerateRequest, GenerationSummary } from './generation'
import { planRoute } from './grant-claim'
import { chainOpenings, directLegs, runChainStep } from './hop-chain'
import { hopStats } from './hop-stats'
import { type HopOpener, openHops, reopenRebuilt } from './open-hops'
import {
  closeHops,
  type HopState,
  markHops,
  replay,
  runStep,
  type StepAt,
  tokenInput,
  unlessAborted,
} from './route-step'
import { openDraft, speculativeTokens } from './speculation'
import { type AuditableHop, auditStep, limitAudits } from './step-audits'

export type { GeneratedToken, GenerateRequest, GenerationSummary, HopStats } from './generation'

/**
 * A step run, with its token, the audits it waits for (undefined
 * when no hop was picked) and the undoing of the steps after it.
 */
type HeldStep = StepAt & {
  sampled: SampledToken
  audits: Promise<AuditableHop | undefined> | undefined
  settled: boolean
  after: () => void
}

/**
 * Steps held for audits: 1, so the next step waits for them (running ahead is off: see docs/architecture.md, audits).
 */
const MAX_HELD_STEPS = Math.min(1, MAX_AUDITS_IN_FLIGHT - 1)

const MAX_FAILOVERS = 4

/**
 * How long close() waits for the tracker to acknowledge the sessions it was told ended (it answers in milliseconds).
 */
export const END_SESSION_WAIT_MS = 5_000

/**
 * Drives one generation across a route of hosts: tokenizes with the model's own tokenizer, asks
 * the tracker for a route, opens the session on every hop, prefills, decodes. When a hop fails it
 * asks for a replacement span, replays that span's inputs so the KV caches are rebuilt, and
 * carries on with the same tokens.
 */
export class SwarmClient {
  private readonly tokenizers = new Map<string, Promise<ModelTokenizer>>()
  /** session.end calls not yet acknowledged: close() waits for them. */
  private readonly ending = new Set<Promise<void>>()
  private closed = false

  private constructor(
    readonly tracker: TrackerChannel,
    /** Signs each open with the key the tracker issued the tickets to. */
    private readonly identity: NodeIdentity,
    private readonly log: (line: string) => void,
    /** Certificates trusted for wss:// hosts besides the system's: those trusted for the tracker. */
    private readonly ca?: TrustedCa,
  ) {}

  /**
   * `trackerUrl`: one tracker, or several instances of one swarm (see
   * openTrackerChannel); `connection.ca` is trusted for hosts too.
   */
  static async connect(
    trackerUrl: string | readonly string[],
    identity: NodeIdentity,
    log: (line: string) => void = () => {},
    connection: TrackerConnectionOptions = {},
  ): Promise<SwarmClient> {
    const tracker = await openTrackerChannel(trackerUrl, '/clients', identity, connection, log)
    limitAudits(tracker, connection.auditsInFlight)
    return new SwarmClient(tracker, identity, log, connection.ca)
  }

  /** The model's tokenizer, used only when its sha256 is the one the model's manifest names. */
  tokenizer(modelId: string): Promise<ModelTokenizer> {
    let t = this.tokenizers.get(modelId)
    if (t === undefined) {
      t = this.loadTokenizer(modelId)
      this.tokenizers.set(modelId, t)
      // A refused or failed load is asked again next time, not remembered.
      const loading = t
      loading.catch(() => this.tokenizers.get(modelId) === loading && this.tokenizers.delete(modelId))
    }
    return t
  }

  private async loadTokenizer(modelId: string): Promise<ModelTokenizer> {
    const [{ manifest }, { tokenizer }] = await Promise.all([
      callRpc(this.tracker, ClientToTracker, 'model.get', { modelId }),
      callRpc(this.tracker, ClientToTracker, 'model.tokenizer', { modelId }),
    ])
    checkTokenizer(
      manifest,
      tokenizer,
      'the tracker sent',
      'it is not the model’s, so it is not used; tell the tracker’s operator.',
    )
    return ModelTokenizer.load(modelId, tokenizer)
  }

  /** Streams tokens; the generator's return value summarises the run. */
  async *generate(request: GenerateRequest): AsyncGenerator<GeneratedToken, GenerationSummary> {
    const tokenizer = await this.tokenizer(request.modelId)
    // A grammar allows the end of generation only where its text is whole: the last hop is told which tokens end it.
    if (request.sampling?.grammar !== undefined)
      request = { ...request, sampling: { ...request.sampling, endTokens: tokenizer.endTokens } }
    const promptTokens = typeof request.prompt === 'string' ? tokenizer.encode(request.prompt) : [...request.prompt]
    if (promptTokens.length === 0) throw new NeuronError('bad_request', 'the prompt is empty; give at least one token.')
    const maxTokens = promptTokens.length + request.maxTokens
    const speculating = await openDraft(request, this.tracker, tokenizer, maxTokens)
    const session = request.session ?? randomBytes(16).toString('hex')
    const failed: string[] = []
    const failovers: { hostId: string; blocks: readonly [number, number]; recoveryMs: number }[] = []
    const receipts: Receipt[] = []
    const collect = async (step: Receipt[]) => {
      receipts.push(...step)
      if (step.length > 0) await request.onReceipts?.(session, step)
    }
    const plan = { modelId: request.modelId, maxTokens, promptTokens: promptTokens.length, exclude: [], session }
    const opening = async () => {
      const route = await planRoute(this.tracker, this.identity, plan, this.log, request.signal)
      // the model's seam precision unless the caller chose one (f32 for mixture-of-experts models)
      const seamed: GenerateRequest = { ...request, hiddenDtype: request.hiddenDtype ?? route.seamDtype ?? 'f16' }
      // hop-to-hop: each seam whose hops reach each other is forwarded host to host (hop-chain.ts)
      const legs = request.forwarding === 'hop-to-hop' ? directLegs(route.hops) : undefined
      const forwarding = legs === undefined ? undefined : chainOpenings(route.hops, legs)
      return {
        route,
        seamed,
        legs,
        hops: await openHops(this.hopOpener, route.hops, session, seamed, maxTokens, true, forwarding),
      }
    }
    const opened = await whenSessionFree(
      opening,
      request.waitForSessionMs ?? WAIT_FOR_SESSION_MS,
      request.signal,
      this.log,
    ).catch((error: unknown) => {
      void speculating?.draft.dispose()
      this.endSession(session)
      throw error
    })
    const { route, seamed } = opened
    let hops = opened.hops
    // after a failover the client carries every leg (the new hop's neighbours were not told of it)
    let legs = opened.legs
    const probed = measureHosts(route.measure ?? [], this.ca)
    request.onRoute?.(hops.map((h) => h.hop))

    const generated: number[] = []
    const text = new StreamingDetokenizer(tokenizer)
    let finishReason: 'stop' | 'length' = 'length'
    let decodeStarted = 0
    const stopAtEog = request.stopAtEog ?? true
    /**
     * Replaces the hop that failed; returns where its step resumes (a liar's step runs again from its replacement on).
     */
    // Steps whose tokens wait for their audits, oldest first (see the loop below); none beside a draft's verify steps.
    let held: HeldStep[] = []
    /**
     * A replacement last hop's sampling: the tokens sampled so far carry its grammar and penalties on where they were.
     */
    const resumed = (r: GenerateRequest): GenerateRequest => {
      const s = r.sampling
      if (s?.grammar === undefined && !s?.presencePenalty && !s?.frequencyPenalty) return r
      return { ...r, sampling: { ...s, generated: [...generated, ...held.map((h) => h.sampled.token)] } }
    }
    const failover = async (error: HopFailure): Promise<{ from: number; pending: HopInput }> => {
      const dead = hops.find((h) => h.hop.hostId === error.hostId)
      if (dead === undefined || failovers.length >= MAX_FAILOVERS) throw error
      const started = performance.now()
      failed.push(dead.hop.hostId)
      this.log(
        `hop ${dead.hop.hostId} [${dead.hop.blocks[0]}, ${dead.hop.blocks[1]}) failed (${error.code}); finding a ` +
          `replacement`,
      )
      // A liar's answers reached every hop after it: those are rebuilt too, and the step runs again.
      const repaired = await this.replace(
        hops,
        dead,
        session,
        resumed(seamed),
        maxTokens,
        failed,
        collect,
        error.code === 'lied',
      )
      hops = repaired.hops
      if (legs !== undefined) legs = []
      failovers.push({ hostId: dead.hop.hostId, blocks: dead.hop.blocks, recoveryMs: performance.now() - started })
      request.onRoute?.(hops.map((h) => h.hop))
      this.log(`replaced in ${(performance.now() - started).toFixed(0)} ms`)
      return repaired
    }
    /**
     * Runs a step until it has a token, failing over hops that fail. `held`: steps before, whose audits run beside
     * this one; a failure first waits for them, and undefined means they found a liar.
     */
    const advance = async (
      at: StepAt,
      from: number,
      pending: HopInput,
      held: readonly HeldStep[] = [],
    ): Promise<SampledToken | undefined> => {
      for (;;) {
        // Hops before a failing one did their work: their receipts count even when the step is retried.
        const stepReceipts: Receipt[] = []
        try {
          const sampled =
            legs === undefined
              ? await runStep(hops, from, session, at, pending, stepReceipts, this.identity)
              : await runChainStep(hops, from, session, at, pending, stepReceipts, this.identity, legs)
          await collect(stepReceipts)
          return sampled
        } catch (error) {
          await collect(stepReceipts)
          if (!(error instanceof HopFailure)) throw error
          for (const h of held) if ((await h.audits) !== undefined) return undefined
          ;({ from, pending } = await failover(error))
        }
      }
    }
    /** A step just run, its audits started and what the hops held after it (to take back the steps that follow). */
    const ran = (at: StepAt, sampled: SampledToken): HeldStep => {
      const audits = auditStep(this.tracker, session, hops, this.log)
      const s: HeldStep = { ...at, sampled, audits, settled: audits === undefined, after: markHops(hops) }
      void audits?.then(() => {
        s.settled = true
      })
      return s
    }
    /** The step after `s`, or undefined when its token ends the generation (`made` tokens with it). */
    const following = (s: StepAt & { sampled: SampledToken }, made: number): StepAt | undefined =>
      made >= request.maxTokens || (stopAtEog && tokenizer.isEndOfGeneration(s.sampled.token))
        ? undefined
        : { step: s.step + 1, position: s.position + s.ids.length, ids: Int32Array.of(s.sampled.token) }
    /**
     * Takes a step's token as generated and gives it with its text; the last token also gives the text still held
     * for an incomplete character. An end-of-generation token ends it: undefined, unless it carries that held text.
     */
    const confirm = (s: StepAt & { sampled: SampledToken }): { token: GeneratedToken | undefined; end: boolean } => {
      generated.push(s.sampled.token)
      const top = s.sampled.top === undefined ? {} : { top: s.sampled.top }
      const token = { token: s.sampled.token, logprob: s.sampled.logprob, ...top, position: s.position + s.ids.length }
      if (stopAtEog && tokenizer.isEndOfGeneration(s.sampled.token)) {
        finishReason = 'stop'
        const held = text.flush()
        return { token: held === '' ? undefined : { ...token, text: held }, end: true }
      }
      const last = generated.length >= request.maxTokens
      return {
        token: { ...token, text: last ? text.push(s.sampled.token) + text.flush() : text.push(s.sampled.token) },
        end: last,
      }
    }
    try {
      if (speculating !== undefined) {
        const route = {
          ...speculating,
          prompt: promptTokens,
          maxNew: request.maxTokens,
          stopAtEog,
          hops: () => hops,
          signal: request.signal,
        }
        for await (const s of speculativeTokens({
          ...route,
          tokenizer,
          step: (at: StepAt) => advance(at, 0, tokenInput(at.ids)),
        })) {
          decodeStarted ||= performance.now()
          const { token, end } = confirm(s)
          if (token !== undefined) yield token
          if (end) break
        }
      }
      let next: StepAt | undefined =
        speculating !== undefined ? undefined : { step: 1, position: 0, ids: Int32Array.from(promptTokens) }
      // Steps whose tokens wait for their audits, oldest first: the audits re-run a hop's history elsewhere, so the
      // route runs on meanwhile, up to the audits a key may have in flight, and tokens are yielded once theirs pass.
      let settleFirst = false
      while (next !== undefined || held.length > 0) {
        if (request.signal?.aborted) break
        const oldest = held[0]
        if (
          oldest !== undefined &&
          (oldest.settled || settleFirst || next === undefined || held.length >= MAX_HELD_STEPS)
        ) {
          settleFirst = false
          const liar = await unlessAborted(oldest.audits, request.signal)
          if (request.signal?.aborted) break
          if (liar !== undefined) {
            // The steps after it took the liar's answers: taken back, and run again after it.
            oldest.after()
            // Their audits count against the key's audits in flight at the tracker until they end.
            await Promise.all(held.map((h) => h.audits))
            held = []
            const { from, pending } = await failover(
              new HopFailure(liar.hop.hostId, 'lied', `host ${liar.hop.hostId} failed an audit`),
            )
            const again = await advance(oldest, from, pending)
            if (again === undefined) throw new NeuronError('internal', 'a step with no audits beside it found a liar')
            held = [ran(oldest, again)]
            next = following({ ...oldest, sampled: again }, generated.length + 1)
            continue
          }
          held.shift()
          const { token, end } = confirm(oldest)
          if (token !== undefined) yield token
          if (end) break
          continue
        }
        if (next === undefined) continue
        const sampled = await advance(next, 0, tokenInput(next.ids), held)
        // undefined: the audits of a held step found a liar; they are settled first, and this step runs again after
        if (sampled === undefined) {
          settleFirst = true
          continue
        }
        if (decodeStarted === 0) decodeStarted = performance.now()
        const step = ran(next, sampled)
        next = following(step, generated.length + held.length + 1)
        if (step.settled && held.length === 0) {
          const { token, end } = confirm(step)
          if (token !== undefined) yield token
          if (end) break
        } else held.push(step)
      }
    } finally {
      await speculating?.draft.dispose()
      await closeHops(hops, session)
      this.endSession(session)
      reportLatencies(
        this.tracker,
        hops.map((h) => ({ hostId: h.hop.hostId, roundTripsMs: h.link.roundTripsMs })),
        await probed,
        this.log,
      )
    }
    const decodeSeconds = (performance.now() - decodeStarted) / 1000
    return {
      promptTokens: promptTokens.length,
      completionTokens: generated.length,
      finishReason,
      route: hopStats(hops),
      decodeTokensPerSecond: generated.length > 1 ? (generated.length - 1) / decodeSeconds : 0,
      failovers,
      session,
      receipts,
      ...(speculating === undefined ? {} : { speculation: speculating.stats }),
    }
  }

  /**
   * Hands a session's receipts to the tracker, which pays the hosts
   * from this key pair's account; returns each one's verdict.
   */
  submitReceipts(session: string, receipts: readonly Receipt[]) {
    return callRpc(this.tracker, ClientToTracker, 'receipts.submit', { session, receipts: [...receipts] })
  }

  /**
   * Closes the tracker connection once the sessions this client ended are acknowledged, or after `waitMs`:
   * closing first would drop those calls, and the tracker would hold the rest of their credit until they expire.
   */
  async close(waitMs = END_SESSION_WAIT_MS): Promise<void> {
    if (this.closed) return
    if (this.ending.size > 0) {
      let timer: NodeJS.Timeout | undefined
      const bound = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, waitMs)
      })
      await Promise.race([Promise.all(this.ending), bound])
      clearTimeout(timer)
    }
    this.closed = true
    this.tracker.close()
  }

  /**
   * What opening hops needs of this client: its key, its trusted CA, its tracker connection (span sessions use it too).
   */
  get hopOpener(): HopOpener {
    return { identity: this.identity, ca: this.ca, tracker: this.tracker }
  }

  /** Tells the tracker the session is over so the rest of its credit hold is free again (best effort). */
  private endSession(session: string): void {
    const ending = callRpc(this.tracker, ClientToTracker, 'session.end', { session })
      .then(
        () => {},
        (e: Error) =>
          this.log(
            this.closed
              ? `session.end: session ${session} was not acknowledged before the client closed its tracker connection`
              : `ending session ${session} at the tracker failed: ${e.message}`,
          ),
      )
      .finally(() => this.ending.delete(ending))
    this.ending.add(ending)
  }

  /**
   * Swaps `dead` for hosts covering its span and replays everything it had been sent, but the
   * step in flight, through them (no sampling), so their KV caches hold the same positions.
   * Returns the new route, where to resume, and the input to resume with.
   */
  private async replace(
    hops: HopState[],
    dead: HopState,
    session: string,
    request: GenerateRequest,
    maxTokens: number,
    failed: string[],
    collect: (receipts: Receipt[]) => Promise<void>,
    /** The hops after `dead` were fed its answers: rebuild their caches from the replacement's. */
    rebuildAfter = false,
  ): Promise<{ hops: HopState[]; from: number; pending: HopInput }> {
    dead.link.close()
    const pending = dead.inputs.at(-1)
    if (pending === undefined)
      throw new NeuronError('internal', `host ${dead.hop.hostId} failed before it was sent anything`)
    const at = hops.indexOf(dead)
    const [previousHop, nextHop] = [hops[at - 1]?.hop.hostId, hops[at + 1]?.hop.hostId]
    const stale = rebuildAfter ? hops.slice(at + 1) : []
    const plan = () =>
      planRoute(
        this.tracker,
        this.identity,
        {
          modelId: request.modelId,
          maxTokens,
          // Hosts already on the route hold this session, and a host opens one session per id.
          exclude: [...failed, ...hops.map((h) => h.hop.hostId)],
          span: dead.hop.blocks,
          ...(previousHop === undefined ? {} : { previousHop }),
          ...(nextHop === undefined ? {} : { nextHop }),
          failedHost: dead.hop.hostId,
          ...(stale.length === 0
            ? {}
            : { rebuild: stale.map((h) => ({ hostId: h.hop.hostId, blocks: h.hop.blocks })) }),
          session,
        },
        this.log,
        request.signal,
      )
    // The hosts left may all be full for a moment (audits' re-runs hold sessions too): it waits as a new chat does.
    const replacement = await whenSessionFree(
      plan,
      request.waitForSessionMs ?? WAIT_FOR_SESSION_MS,
      request.signal,
      this.log,
    )
    const isLast = hops.at(-1) === dead
    const fresh = await openHops(this.hopOpener, replacement.hops, session, request, maxTokens, isLast)
    let chunks = dead.inputs.slice(0, -1)
    let replayStep = REPLAY_STEP_BASE
    const after = await reopenRebuilt(this.hopOpener, stale, replacement.rebuildTickets, session, request, maxTokens)
    for (const h of [...fresh, ...after]) {
      chunks = await replay(h, chunks, session, replayStep, collect, this.identity)
      replayStep += h.inputs.length
    }
    return { hops: [...hops.slice(0, at), ...fresh, ...(rebuildAfter ? after : hops.slice(at + 1))], from: at, pending }
  }
}
