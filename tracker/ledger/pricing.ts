import { z } from 'zod'
import { feeOf, type Manifest, NeuronError } from '../../protocol'

/** A model's price, micro-credits per token. */
export interface Price {
  readonly promptMicroPerToken: number
  readonly completionMicroPerToken: number
}

export interface PricingOptions {
  /** Explicit prices per model id; others get the size-scaled default. */
  readonly prices?: Readonly<Record<string, Price>>
  /** The swarm's share of every charge, basis points (default DEFAULT_FEE_BPS). */
  readonly feeBps?: number
  /**
   * Rent of a session's KV cache, micro-credits per GB per minute
   * (default RENT_MICRO_PER_GB_MINUTE, tracker/ledger/rent.ts).
   */
  readonly rentMicroPerGbMinute?: number
  /** What a volunteer relay earns per frame it carries, micro-credits (default DEFAULT_RELAY_MICRO_PER_FRAME). */
  readonly relayMicroPerFrame?: number
  /**
   * The standby fee, basis points of what a session paid a hop: shared by the hop's twins the route named, who stand
   * by to re-run its steps (default DEFAULT_STANDBY_BPS, tracker/ledger/standby.ts).
   */
  readonly standbyBps?: number
}

/**
 * Default price: a completion token costs 100 micro-credits per GB of weights (at least 100), a
 * prompt token a quarter of that — prefill is batched, so cheaper per token to serve.
 */
export function defaultPrice(manifest: Pick<Manifest, 'bytesPerBlock'>): Price {
  const gb = manifest.bytesPerBlock.reduce((s, b) => s + b, 0) / 1e9
  const completion = Math.max(100, Math.round(100 * gb))
  return { promptMicroPerToken: Math.max(25, Math.round(completion / 4)), completionMicroPerToken: completion }
}

export function priceOf(manifest: Pick<Manifest, 'modelId' | 'bytesPerBlock'>, options: PricingOptions): Price {
  return options.prices?.[manifest.modelId] ?? defaultPrice(manifest)
}

/**
 * What one hop's receipt for one step costs the consumer, micro-credits. Step 1 is the prefill: it
 * carries the prompt and yields the first completion token; every later step yields one more. The
 * step's price is shared by the hops in proportion to the blocks each ran.
 */
export function hopCharge(
  price: Price,
  nLayer: number,
  r: { step: number; tokens: number; blocks: readonly [number, number] },
): number {
  const stepMicro = (r.step === 1 ? r.tokens * price.promptMicroPerToken : 0) + price.completionMicroPerToken
  return Math.round((stepMicro * (r.blocks[1] - r.blocks[0])) / nLayer)
}

/**
 * What serving `blocks` earns a host in an hour at `tokensPerSecond` decoded tokens, micro-credits,
 * net of the swarm's fee: the price of a completion token's share of those blocks, per token.
 */
export function hostMicroPerHour(
  price: Price,
  feeBps: number,
  nLayer: number,
  blocks: readonly [number, number],
  tokensPerSecond: number,
): number {
  const perToken = hopCharge(price, nLayer, { step: 2, tokens: 1, blocks })
  return Math.round((perToken - feeOf(perToken, feeBps)) * tokensPerSecond * 3600)
}

/**
 * The most a generation can cost: its prompt and every completion token it may produce, plus a
 * micro-credit per hop per step for rounding (at most one hop per block).
 */
export function maxCost(price: Price, nLayer: number, promptTokens: number, maxTokens: number): number {
  return promptTokens * price.promptMicroPerToken + maxTokens * (price.completionMicroPerToken + nLayer)
}

/** How many completion tokens `available` micro-credits cover after the prompt; 0 when not even one. */
export function affordableTokens(price: Price, nLayer: number, promptTokens: number, available: number): number {
  const left = available - promptTokens * price.promptMicroPerToken
  return left <= 0 ? 0 : Math.floor(left / (price.completionMicroPerToken + nLayer))
}

const EnvPrices = z.record(
  z.string(),
  z.object({ prompt: z.number().int().nonnegative(), completion: z.number().int().nonnegative() }),
)

/**
 * Prices and fee from the environment of `neuron tracker`: NEURON_PRICES is JSON
 * `{ "<model id>": { "prompt": <micro per token>, "completion": <micro per token> } }`,
 * NEURON_FEE_BPS the swarm's share in basis points, NEURON_STANDBY_BPS the twins' standby fee (standby.ts).
 */
export function pricingFromEnv(env: NodeJS.ProcessEnv): PricingOptions {
  const out: { prices?: Record<string, Price>; feeBps?: number; standbyBps?: number } = {}
  if (env.NEURON_PRICES !== undefined && env.NEURON_PRICES !== '') {
    const parsed = EnvPrices.safeParse(JSON.parse(env.NEURON_PRICES))
    if (!parsed.success)
      throw new NeuronError(
        'bad_option',
        `NEURON_PRICES: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      )
    out.prices = Object.fromEntries(
      Object.entries(parsed.data).map(([id, p]) => [
        id,
        { promptMicroPerToken: p.prompt, completionMicroPerToken: p.completion },
      ]),
    )
  }
  const standby = Number(env.NEURON_STANDBY_BPS)
  if (env.NEURON_STANDBY_BPS !== undefined && env.NEURON_STANDBY_BPS !== '') {
    if (!Number.isInteger(standby) || standby < 0 || standby > 10_000)
      throw new NeuronError(
        'bad_option',
        `NEURON_STANDBY_BPS is basis points 0..10000 of what a session pays a hop, not "${env.NEURON_STANDBY_BPS}".`,
      )
    out.standbyBps = standby
  }
  const fee = Number(env.NEURON_FEE_BPS)
  if (env.NEURON_FEE_BPS !== undefined && env.NEURON_FEE_BPS !== '') {
    if (!Number.isInteger(fee) || fee < 0 || fee > 10_000)
      throw new NeuronError('bad_option', `NEURON_FEE_BPS is basis points 0..10000, not "${env.NEURON_FEE_BPS}".`)
    out.feeBps = fee
  }
  return out
}
