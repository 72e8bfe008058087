import type { Receipt, RouteHop, SamplingParams } from '../../protocol'

// What one generation asks of SwarmClient.generate, and what it yields and returns.

export interface GenerateRequest {
  readonly modelId: string
  /** Plain text (BOS added as the model wants) or token ids. */
  readonly prompt: string | readonly number[]
  readonly maxTokens: number
  readonly sampling?: SamplingParams
  /** How hidden states cross seams; by default the model's (`Route.seamDtype`: f32 for mixture-of-experts models). */
  readonly hiddenDtype?: 'f16' | 'f32'
  /**
   * How hidden states travel: through the client between every two hops ('client-relayed'), or from hop to hop where
   * two hops can reach each other ('hop-to-hop': the client sends the first hop the step and gets the token from the
   * last; see client/generation/hop-to-hop.ts). 'auto', the default: hop to hop on the seams whose two hops are
   * reached directly and far from the client (its pings to both at least FORWARD_FROM_RTT_MS), where forwarding saves
   * the client's round trips; through the client on a LAN. Both ways are audited alike.
   */
  readonly forwarding?: 'auto' | 'client-relayed' | 'hop-to-hop'
  /** Stop early at an end-of-generation token (default true). */
  readonly stopAtEog?: boolean
  readonly signal?: AbortSignal
  /** Told the route when it is opened and again after each failover. */
  readonly onRoute?: (hops: readonly RouteHop[]) => void
  /**
   * Told each step's signed receipts, one per hop, before the step's token is yielded (awaited:
   * the gateway commits its ledger entries here). Replay steps after a failover are told too.
   */
  readonly onReceipts?: (session: string, receipts: readonly Receipt[]) => void | Promise<void>
  /** The session id to use (32 hex digits); default a random one. */
  readonly session?: string
  /**
   * With SwarmClient.reusePrefixes: whose ended sessions this one may start from, when its prompt begins as theirs
   * did (a client serving many callers, as the gateway does, names the caller: one caller's cache never answers
   * another's). Default '' (every session of the client).
   */
  readonly prefixScope?: string
  /** false: this request starts from no earlier session's cache (the prompt is prefilled whole). Default true. */
  readonly reusePrefix?: boolean
  /** Told, before the first token, how many of the prompt's tokens the hops start from a cache of (a fork's). */
  readonly onCached?: (tokens: number) => void
  /** How long to wait for a free session while every host that could serve is full (default 30 s); 0 fails at once. */
  readonly waitForSessionMs?: number
  /**
   * Speculative decoding (greedy only): a local GGUF with the
   * model's tokenizer drafts `k` tokens (default 4) per route step.
   */
  readonly draft?: DraftRequest
}

/** A request's draft: a local GGUF with the route model's tokenizer, and the tokens it drafts per step. */
export interface DraftRequest {
  readonly path: string
  readonly k?: number
}

/**
 * A generated token and its text. An end-of-generation token is yielded only when a generation ended inside a
 * multi-byte character: it carries the held bytes as U+FFFD, so the texts joined equal llama.cpp's detokenize.
 */
export interface GeneratedToken {
  readonly token: number
  /** Text this token adds: empty while a multi-byte character is incomplete; the last token's ends what is held. */
  readonly text: string
  readonly logprob: number
  /**
   * The most likely tokens at this step and their log-probabilities,
   * most likely first, when `sampling.topLogprobs` asked.
   */
  readonly top?: readonly { readonly token: number; readonly logprob: number }[]
  readonly position: number
}

export interface HopStats {
  readonly hostId: string
  readonly blocks: readonly [number, number]
  /** Median round trip to this hop per decode step, ms (compute + transfer). */
  readonly medianMs: number
  /** The volunteer relay this hop was reached through, if any. */
  readonly relayHostId?: string
  /** How the client reached it: at its own port, over a channel punched through the routers, or through a relay. */
  readonly reached: 'direct' | 'punched' | 'relayed'
  /**
   * Hidden-state bytes the client received from it (where its link counts them): 0 where every step's output went
   * on to the next hop itself (hop to hop).
   */
  readonly hiddenBytesIn?: number
}

export interface GenerationSummary {
  readonly promptTokens: number
  /** Of them, the positions a conversation's session already held: not sent again (0 for a session's first turn). */
  readonly cachedTokens: number
  readonly completionTokens: number
  readonly finishReason: 'stop' | 'length'
  readonly route: readonly HopStats[]
  readonly decodeTokensPerSecond: number
  readonly failovers: readonly {
    readonly hostId: string
    readonly blocks: readonly [number, number]
    readonly recoveryMs: number
  }[]
  readonly session: string
  /** Every hop's signed receipt for every step, in order (hosts that sign none add none). */
  readonly receipts: readonly Receipt[]
  /** With a draft: the verify steps run and the drafted tokens the route accepted. */
  readonly speculation?: SpeculationStats
}

/** What speculation did in one generation. */
export interface SpeculationStats {
  /** Verify steps run (each is one step of the route, whatever its drafts). */
  verifySteps: number
  drafted: number
  accepted: number
}
