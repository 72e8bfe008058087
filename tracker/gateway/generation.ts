import { randomBytes } from 'node:crypto'
import type { SwarmClient } from '../../client/swarm-client'
import { NeuronError, type Receipt, type SamplingParams } from '../../protocol'
import { firstStop, stopHoldback } from '../../text/stop-sequences'
import { consumerAccount } from '../ledger/accounts'
import type { CreditHolds } from '../ledger/credit-holds'
import type { StoredAccount } from '../ledger/ledger-store'
import { affordableTokens, maxCost, type PricingOptions, priceOf } from '../ledger/pricing'
import { type Chunk, LogprobTrail } from './chunks'
import type { GatewayDeps } from './deps'
import { GatewayError } from './errors'

/** The gateway routes that generate, as the account's request log names them. */
export type GenerationEndpoint =
  | 'chat.completions'
  | 'completions'
  | 'ollama.chat'
  | 'ollama.generate'
  | 'anthropic.messages'

/** One generation as the swarm runs it, whichever endpoint asked for it. */
export interface Generation {
  /** The route that asked, as the account's request log names it. */
  readonly endpoint: GenerationEndpoint
  readonly modelId: string
  readonly promptTokens: number[]
  readonly maxTokens: number
  readonly temperature: number
  readonly topP: number | undefined
  /** Samplers the OpenAI API lacks, which Ollama's and Anthropic's requests may set (absent: off). */
  readonly topK?: number
  readonly minP?: number
  readonly repeatPenalty?: number
  readonly seed: number
  readonly stop: readonly string[]
  /** A GBNF grammar the last hop holds the output to (response_format, tools). */
  readonly grammar?: string | undefined
  readonly presencePenalty?: number | undefined
  readonly frequencyPenalty?: number | undefined
  /** Log-probabilities of each token, with this many most likely alternatives (0 to 20); undefined: none. */
  readonly logprobs?: number | undefined
}

/**
 * Generations on the swarm through the tracker's own SwarmClient, paid from the caller's account
 * by the hops' signed receipts as they arrive.
 */
export class PaidGenerations {
  constructor(
    private readonly deps: Pick<
      GatewayDeps,
      'catalog' | 'accounts' | 'ledger' | 'metering' | 'reputation' | 'client' | 'sponsor' | 'apiRequests' | 'log'
    >,
    private readonly pricing: PricingOptions,
    private readonly holds: CreditHolds,
    /** The longest the swarm may go without a token before the generation is given up (503): see STALL_MS. */
    private readonly stallMs = STALL_MS,
    /** Whether one account's request may start from another's cache (GatewayOptions.sharedPrefixes). */
    private readonly sharedPrefixes = false,
  ) {}

  /**
   * Refuses (402) at once a caller whose free credits cannot pay a prompt of `fewestPromptTokens` and one
   * token, before the prompt is tokenized; `run` checks again, exactly, when it takes the hold.
   */
  async checkAffordable(account: StoredAccount, modelId: string, fewestPromptTokens: number): Promise<void> {
    const { manifest } = this.deps.catalog.get(modelId)
    const price = priceOf(manifest, this.pricing)
    const available =
      (await this.deps.ledger.balance(consumerAccount(account.accountId))) -
      (await this.holds.heldMicro(account.accountId))
    if (affordableTokens(price, manifest.nLayer, fewestPromptTokens, available) < 1) {
      throw unaffordable(
        account,
        available,
        maxCost(price, manifest.nLayer, fewestPromptTokens, 1),
        `at least ${fewestPromptTokens}`,
      )
    }
  }

  /**
   * Runs one generation on the swarm for `account`: refuses (402) when its credits cannot cover the
   * prompt and one token, caps max_tokens at what they cover (finish 'length' there) and holds that
   * much, writes text only once its steps' receipts are committed (in batches, every SETTLE_EVERY_MS),
   * trims at stop strings. A swarm that makes no token for `stallMs` (the first: plus the prompt's
   * allowance) ends it with a typed error: a hop that answers pings but never its step would hold the caller forever.
   */
  /**
   * The generation's text as it is paid for, then its finish. The finish comes only once the generation is settled,
   * its hold released and its request logged: a caller may stop reading at the finish (every endpoint's non-streamed
   * answer does) without leaving that clean-up suspended in a generator nobody resumes.
   */
  async *run(account: StoredAccount, g: Generation, caller: AbortSignal): AsyncGenerator<Chunk, void> {
    let finish: Chunk | undefined
    let written = false
    // the hosts gave up the cache its prompt was to start from before any text: once more, prefilled whole
    for (const reusePrefix of [true, false]) {
      try {
        for await (const c of this.paid(account, g, caller, reusePrefix)) {
          if ('done' in c) finish = c
          else {
            written = true
            yield c
          }
        }
        break
      } catch (error) {
        if (!reusePrefix || written || !(error instanceof NeuronError) || error.code !== 'prefix_gone') throw error
      }
    }
    if (finish !== undefined) yield finish
  }

  private async *paid(
    account: StoredAccount,
    g: Generation,
    caller: AbortSignal,
    /** false: prefill the whole prompt (a retry after the cache it was to start from was given up). */
    reusePrefix = true,
  ): AsyncGenerator<Chunk, void> {
    const stop = new AbortController()
    const onCallerGone = () => stop.abort()
    caller.addEventListener('abort', onCallerGone, { once: true })
    const signal = stop.signal
    let stalled = false
    const bounded = <T>(step: Promise<T>, ms: number): Promise<T> =>
      new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          stalled = true
          stop.abort()
          reject(
            new GatewayError(
              503,
              'service_unavailable',
              'swarm_stalled',
              `the swarm made no token for ${Math.round(ms / 1000)} s (a hop stopped answering); the generation ` +
                `was stopped, retry it.`,
            ),
          )
        }, ms)
        step.then(resolve, reject).finally(() => clearTimeout(timer))
      })
    const stored = this.deps.catalog.get(g.modelId)
    const { nLayer } = stored.manifest
    const price = priceOf(stored.manifest, this.pricing)
    // The tracker routes the session for the caller's account: this generation's hold pays for it.
    const session = randomBytes(16).toString('hex')
    let maxTokens = 0
    // Checked and taken in one store transaction: another instance's generation cannot spend the same credits.
    await this.holds.take(session, account.accountId, (available) => {
      const affordable = affordableTokens(price, nLayer, g.promptTokens.length, available)
      if (affordable < 1)
        throw unaffordable(
          account,
          available,
          maxCost(price, nLayer, g.promptTokens.length, 1),
          `${g.promptTokens.length}`,
        )
      maxTokens = Math.min(g.maxTokens, affordable)
      return { heldMicro: maxCost(price, nLayer, g.promptTokens.length, maxTokens), maxTokens }
    })
    const log = {
      session,
      accountId: account.accountId,
      endpoint: g.endpoint,
      modelId: g.modelId,
      promptTokens: g.promptTokens.length,
    }
    let generated = 0
    let status = 'cancelled'
    await this.deps.apiRequests
      .started({ ...log, startedAt: Date.now() })
      .catch((e: Error) => this.deps.log(`request log: ${e.message}`))
    let outOfCredits = false
    // Receipts wait here until a commit: text is written only once its step's receipts are committed (so every
    // token a caller got is paid, even across a tracker crash), but commits are batched, one every SETTLE_EVERY_MS
    // at most and each while the next step runs: a commit is an fsync on the event loop that relays the hops.
    const unsettled: { session: string; receipts: readonly Receipt[] }[] = []
    // What they charge shrinks the hold: the store counts the session's settled charges against it.
    const settle = async () => {
      for (let batch = unsettled.shift(); batch !== undefined; batch = unsettled.shift()) {
        const receipts = [...batch.receipts]
        // one commit for every queued step of the same session
        while (unsettled[0]?.session === batch.session) receipts.push(...(unsettled.shift()?.receipts ?? []))
        await this.deps.metering.bind(batch.session, account.accountId)
        for (const v of await this.deps.metering.settle(batch.session, receipts))
          if (v.code === 'insufficient_credits') outOfCredits = true
      }
    }
    let settledAt = Number.NEGATIVE_INFINITY // the first token goes out at once
    // of the prompt, the tokens the hosts started from a cache of: not prefilled, not paid (the usage says so)
    let cachedTokens = 0
    let tokens: ReturnType<SwarmClient['generate']> | undefined
    try {
      const client = await this.deps.client()
      this.deps.sponsor?.(session, account.accountId)
      tokens = client.generate({
        session,
        modelId: g.modelId,
        prompt: g.promptTokens,
        maxTokens,
        sampling: samplingOf(g),
        signal,
        prefixScope: this.sharedPrefixes ? '' : account.accountId,
        reusePrefix,
        onCached: (n) => {
          cachedTokens = n
        },
        onReceipts: (session, receipts) => {
          unsettled.push({ session, receipts })
        },
      })
      const holdback = stopHoldback(g.stop)
      const logprobs = g.logprobs === undefined ? undefined : new LogprobTrail(await client.tokenizer(g.modelId))
      /** A chunk of the text up to `end`, with the log-probabilities of the tokens that begin before it. */
      const chunk = (from: number, end: number) => ({
        text: text.slice(from, end),
        ...(logprobs === undefined ? {} : { logprobs: logprobs.until(end) }),
      })
      let text = ''
      let sent = 0
      let next = await bounded(tokens.next(), this.stallMs + g.promptTokens.length * STALL_MS_PER_PROMPT_TOKEN)
      while (!next.done) {
        generated = countGenerated(next.value.position, g.promptTokens.length)
        logprobs?.push(next.value, text.length)
        text += next.value.text
        const { at, stopSequence } = firstStop(text, g.stop)
        if (stopSequence !== undefined) {
          await settle()
          if (at > sent) yield chunk(sent, at)
          await tokens.return(undefined as never)
          await settle()
          status = 'completed'
          yield { done: true, finishReason: 'stop', completionTokens: generated, cachedTokens, stopSequence }
          return
        }
        const following = bounded(tokens.next(), this.stallMs)
        following.catch(() => {}) // awaited below; this only keeps it from counting as unhandled meanwhile
        if (performance.now() - settledAt < SETTLE_EVERY_MS) {
          next = await following
          continue
        }
        settledAt = performance.now()
        await settle()
        if (outOfCredits) {
          await following.catch(() => undefined)
          await tokens.return(undefined as never)
          await settle()
          // Nothing past what was written: the steps since (a batch of them) may include those refused as unpaid.
          // Rare: the generation's hold covers every token it may make.
          status = 'completed'
          yield { done: true, finishReason: 'length', completionTokens: generated, cachedTokens }
          return
        }
        // Hold back what might be the start of a stop string.
        const safe = Math.max(sent, text.length - holdback)
        if (safe > sent) {
          yield chunk(sent, safe)
          sent = safe
        }
        next = await following
      }
      await settle()
      if (text.length > sent) yield chunk(sent, text.length)
      const s = next.value
      for (const hop of s.route)
        if (hop.medianMs > 0)
          this.deps.reputation.observedLatency(hop.hostId, hop.blocks[1] - hop.blocks[0], hop.medianMs)
      generated = s.completionTokens
      status = 'completed'
      yield { done: true, finishReason: s.finishReason, completionTokens: s.completionTokens, cachedTokens }
    } catch (error) {
      status =
        error instanceof GatewayError && error.code !== null
          ? error.code
          : error instanceof NeuronError
            ? error.code
            : 'failed'
      throw error
    } finally {
      // A caller who hung up: what its steps cost is committed before the hold that covers it goes.
      await settle().catch(() => {})
      caller.removeEventListener('abort', onCallerGone)
      // A commit that threw left the generation running: its hops close now rather than when they idle out. A stalled
      // one is aborted: its return waits for the step it is stuck in, so it is not awaited.
      const closing = tokens?.return(undefined as never).catch(() => {})
      if (!stalled) await closing
      // A hold whose release fails stays until it is idle past its expiry, then any instance releases it.
      await this.holds.release(session).catch(() => {})
      await this.deps.apiRequests
        .ended(session, generated, status)
        .catch((e: Error) => this.deps.log(`request log: ${e.message}`))
    }
  }
}

function unaffordable(account: StoredAccount, available: number, cost: number, promptTokens: string): GatewayError {
  return new GatewayError(
    402,
    'insufficient_quota',
    'insufficient_credits',
    `account ${account.accountId} has ${available} micro-credits available; this prompt of ${promptTokens} tokens ` +
      `and one completion token cost ${cost}. Ask the operator for a grant.`,
  )
}

/**
 * How long the swarm may go without a token by default: longer than a wait for a free session (30 s) and a
 * hop's failover; a prefill is allowed STALL_MS_PER_PROMPT_TOKEN more per prompt token.
 */
export const STALL_MS = 60_000
const STALL_MS_PER_PROMPT_TOKEN = 20

/** How often a generation's receipts are committed, and its text written, while it runs: 5 times a second. */
const SETTLE_EVERY_MS = 200

/** The swarm's sampling parameters of a generation. */
function samplingOf(g: Generation): SamplingParams {
  return {
    temperature: g.temperature,
    seed: g.seed,
    ...(g.topP === undefined ? {} : { topP: g.topP }),
    ...(g.topK === undefined ? {} : { topK: g.topK }),
    ...(g.minP === undefined ? {} : { minP: g.minP }),
    ...(g.repeatPenalty === undefined ? {} : { repeatPenalty: g.repeatPenalty }),
    ...(g.grammar === undefined ? {} : { grammar: g.grammar }),
    ...(g.presencePenalty ? { presencePenalty: g.presencePenalty } : {}),
    ...(g.frequencyPenalty ? { frequencyPenalty: g.frequencyPenalty } : {}),
    ...(g.logprobs === undefined ? {} : { topLogprobs: g.logprobs }),
  }
}

/** SwarmClient's `position` after a token is the prompt plus the tokens before it. */
function countGenerated(position: number, promptTokens: number): number {
  return position - promptTokens + 1
}
