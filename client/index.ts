/**
 * Neuron's client SDK: hidden states on a swarm, from code. Read the state after any block, add a vector there
 * (steering) and generate from it, or run one span of blocks on a state you give. Every run is a session like a
 * chat's: the tracker plans a route for its blocks, tickets each hop and holds credits; each hop's signed receipt
 * charges the key's account. See docs/sdk.md for runnable examples.
 *
 * @example
 * const swarm = await connect({ tracker: 'http://127.0.0.1:8787' })
 * const { state } = await swarm.hiddenStates({ model, prompt: 'Once upon a time', afterBlock: 2 })
 * console.log(state.tokens, state.width, state.data[0])
 * await swarm.close()
 */

import type { TrustedCa } from '../dataplane/tls-trust'
import { NodeIdentity } from '../identity/keys'
import { ClientToTracker, callRpc, type Manifest, type Receipt } from '../protocol'
import { generateSteered, type HiddenState, runToBlock, type StateResult, type Steering } from './hidden-states'
import { SwarmClient } from './swarm-client'

export { MAX_HIDDEN_ABS, MAX_HIDDEN_TOKENS, MAX_HIDDEN_VALUES, MAX_HIDDEN_WIDTH } from '../protocol'
export type { HiddenState, Steering } from './hidden-states'

export interface ConnectOptions {
  /** The tracker's URL (http:// or https://), or several instances of one swarm. */
  readonly tracker: string | readonly string[]
  /** The key the account is tied to; default a fresh one (a granting tracker opens its account on first use). */
  readonly key?: NodeIdentity
  /** Certificates trusted for the tracker and hosts besides the system's. */
  readonly ca?: TrustedCa
  readonly log?: (line: string) => void
}

/** Where a run started and what it went through. */
export interface HiddenStatesResult {
  /** rows (tokens) × width f32: the residual stream after `afterBlock` (with `add` added when it was there). */
  readonly state: HiddenState
  /** The prompt's token ids (the model's tokenizer's, BOS included as the model wants); absent for a span run. */
  readonly tokenIds?: readonly number[]
  readonly fromBlock: number
  readonly afterBlock: number
  /** The hosts that ran it, with their blocks, span by span. */
  readonly route: StateResult['route']
  /** Micro-credits the tracker charged for it, as far as its receipts had not been handed in by the hosts already. */
  readonly chargedMicro: number
}

/** A connection to a swarm's tracker; close it when done. */
export class Swarm {
  private readonly manifests = new Map<string, Promise<Manifest>>()

  private constructor(
    /** The underlying swarm client (routes, failover, chat generation). */
    readonly client: SwarmClient,
  ) {}

  /** Connects to the tracker with `key` (or a new one). */
  static async connect(options: ConnectOptions): Promise<Swarm> {
    const key = options.key ?? NodeIdentity.generate()
    return new Swarm(
      await SwarmClient.connect(options.tracker, key, options.log, options.ca === undefined ? {} : { ca: options.ca }),
    )
  }

  /** The model's manifest as its publisher signed it (blocks `nLayer`, width `nEmbd`, context, seams). */
  model(modelId: string): Promise<Manifest> {
    let m = this.manifests.get(modelId)
    if (m === undefined) {
      m = callRpc(this.client.tracker, ClientToTracker, 'model.get', { modelId }).then((r) => r.manifest)
      this.manifests.set(modelId, m)
      m.catch(() => this.manifests.delete(modelId))
    }
    return m
  }

  /**
   * Runs `prompt` (text, tokenized by the model's own tokenizer, or token ids) through blocks 0..afterBlock and
   * answers the state after `afterBlock` (0 ≤ afterBlock ≤ nLayer − 2). With `add`, its vector is added to every row
   * after `add.block` (≤ afterBlock) before the next block runs. At most MAX_HIDDEN_TOKENS tokens.
   */
  async hiddenStates(r: {
    model: string
    prompt: string | readonly number[]
    afterBlock: number
    add?: Steering
    signal?: AbortSignal
  }): Promise<HiddenStatesResult> {
    const [manifest, tokenIds] = await Promise.all([this.model(r.model), this.tokens(r.model, r.prompt)])
    const result = await runToBlock(this.client.hopOpener, manifest, {
      input: { tokens: tokenIds },
      afterBlock: r.afterBlock,
      ...(r.add === undefined ? {} : { add: r.add }),
      ...(r.signal === undefined ? {} : { signal: r.signal }),
    })
    return { ...result, tokenIds, chargedMicro: await this.pay(result.receipts) }
  }

  /**
   * Runs blocks [blocks[0], blocks[1]) on `input`, the state after block blocks[0] − 1 (rows × nEmbd f32), and
   * answers the state after block blocks[1] − 1. 1 ≤ blocks[0] < blocks[1] ≤ nLayer − 1.
   */
  async runSpan(r: {
    model: string
    blocks: readonly [number, number]
    input: HiddenState
    add?: Steering
    signal?: AbortSignal
  }): Promise<HiddenStatesResult> {
    const manifest = await this.model(r.model)
    const result = await runToBlock(this.client.hopOpener, manifest, {
      input: { from: r.blocks[0], state: r.input },
      afterBlock: r.blocks[1] - 1,
      ...(r.add === undefined ? {} : { add: r.add }),
      ...(r.signal === undefined ? {} : { signal: r.signal }),
    })
    return { ...result, chargedMicro: await this.pay(result.receipts) }
  }

  /**
   * Generates up to `maxTokens` tokens after `prompt`; with `add`, its vector is added to the state after `add.block`
   * at every position, the prompt's and each new token's (steering). Greedy unless `temperature` is given.
   */
  async generate(r: {
    model: string
    prompt: string | readonly number[]
    maxTokens: number
    add?: Steering
    temperature?: number
    seed?: number
    signal?: AbortSignal
  }): Promise<{ tokens: number[]; text: string; chargedMicro: number }> {
    const [manifest, prompt, tokenizer] = await Promise.all([
      this.model(r.model),
      this.tokens(r.model, r.prompt),
      this.client.tokenizer(r.model),
    ])
    const { tokens, receipts } = await generateSteered(this.client.hopOpener, manifest, {
      prompt,
      maxTokens: r.maxTokens,
      sampling: { temperature: r.temperature ?? 0, seed: r.seed ?? 0 },
      isEnd: (t) => tokenizer.isEndOfGeneration(t),
      ...(r.add === undefined ? {} : { add: r.add }),
      ...(r.signal === undefined ? {} : { signal: r.signal }),
    })
    return { tokens, text: tokenizer.decode(tokens, prompt), chargedMicro: await this.pay(receipts) }
  }

  /** Closes the tracker connection. */
  close(): Promise<void> {
    return this.client.close()
  }

  private async tokens(modelId: string, prompt: string | readonly number[]): Promise<number[]> {
    if (typeof prompt !== 'string') return [...prompt]
    return (await this.client.tokenizer(modelId)).encode(prompt)
  }

  /** Hands the receipts in (the hosts hand theirs in too: each is charged once); the micro-credits these charged. */
  private async pay(receipts: StateResult['receipts']): Promise<number> {
    let charged = 0
    for (const r of receipts) {
      if (r.receipts.length === 0) continue
      const { verdicts } = await this.client.submitReceipts(r.session, r.receipts as Receipt[])
      for (const v of verdicts) charged += v.charged
    }
    return charged
  }
}

/** Connects to a swarm: `const swarm = await connect({ tracker: 'https://tracker.example' })`. */
export function connect(options: ConnectOptions): Promise<Swarm> {
  return Swarm.connect(options)
}
