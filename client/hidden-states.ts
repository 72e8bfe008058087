// Hidden states on a route: the state after block k, a vector added after block k (steering), a span [a, b) run on
// a given state. Each is a chain of span sessions (span-session.ts) cut where the caller reads or changes the state;
// every hop is ticketed, signed and paid like any session. Bounds are checked here, before anything is planned.

import type { HopInput } from '../dataplane/hop-frames'
import {
  cutAllowed,
  fromF16,
  MAX_HIDDEN_ABS,
  MAX_HIDDEN_TOKENS,
  MAX_HIDDEN_VALUES,
  type Manifest,
  NeuronError,
  type Receipt,
  type SamplingParams,
  seamAt,
  seamSideValues,
} from '../protocol'
import { tokenInput } from './generation/step-runner'
import type { HopOpener } from './open-hops'
import { type SpanOutput, SpanSession } from './span-session'

/** A hidden state: `tokens` rows of `width` f32 values, row-major (the residual stream at one cut). */
export interface HiddenState {
  readonly tokens: number
  readonly width: number
  readonly data: Float32Array
}

/** A vector added to every row of the state after `block`, before block + 1 runs. */
export interface Steering {
  readonly block: number
  readonly vector: Float32Array
}

/**
 * Called before each span's session is planned, with its id: the gateway holds credits for it and sponsors it there.
 */
export type BeforeSpan = (session: string, blocks: readonly [number, number], rows: number) => Promise<void>

export interface StateRequest {
  /** Token ids from block 0, or a state entering block `from` (the one after block from − 1). */
  readonly input: { readonly tokens: readonly number[] } | { readonly from: number; readonly state: HiddenState }
  /**
   * The block after which the state is read: from ≤ afterBlock
   * ≤ nLayer − 2 (the last block feeds the head on its host).
   */
  readonly afterBlock: number
  readonly add?: Steering
  readonly signal?: AbortSignal
  readonly beforeSpan?: BeforeSpan
  /** Session ids to use, one per span (the gateway's); default random ones. */
  readonly sessions?: () => string
}

export interface StateResult {
  readonly state: HiddenState
  readonly fromBlock: number
  readonly afterBlock: number
  /** Every hop's signed receipt, with the session it belongs to. */
  readonly receipts: readonly { readonly session: string; readonly receipts: readonly Receipt[] }[]
  readonly route: readonly { readonly hostId: string; readonly blocks: readonly [number, number] }[]
}

const outOfRange = (message: string, details: Record<string, unknown>) =>
  new NeuronError('block_out_of_range', message, details)

/**
 * Checks a state request against the model; throws a typed NeuronError naming the bound that was passed (its
 * `details.param`: the request field, as POST /v1/hidden_states names it).
 */
export function checkStateRequest(manifest: Manifest, r: StateRequest): void {
  const { nLayer } = manifest
  const from = 'from' in r.input ? r.input.from : 0
  const last = nLayer - 2
  if (
    !Number.isInteger(r.afterBlock) ||
    r.afterBlock < from ||
    r.afterBlock > last ||
    !cutAllowed(manifest, r.afterBlock + 1)
  )
    throw outOfRange(
      `after_block ${r.afterBlock} is outside [${from}, ${last}] or not a cut the manifest allows: the state can ` +
        `be read after blocks ${from}..${last} of this ${nLayer}-block model (the last block feeds the head on its ` +
        `host).`,
      { afterBlock: r.afterBlock, nLayer, param: 'after_block' },
    )
  const rows = 'tokens' in r.input ? r.input.tokens.length : r.input.state.tokens
  const most = Math.min(MAX_HIDDEN_TOKENS, manifest.contextLength || MAX_HIDDEN_TOKENS)
  if (rows < 1 || rows > most)
    throw new NeuronError('too_many_tokens', `a hidden-state run takes 1 to ${most} tokens, not ${rows}.`, {
      rows,
      most,
      param: 'tokens',
    })
  if ('tokens' in r.input) {
    const bad = r.input.tokens.find((t) => !Number.isInteger(t) || t < 0 || t >= manifest.nVocab)
    if (bad !== undefined)
      throw new NeuronError(
        'bad_request',
        `token id ${bad} is not in this model's vocabulary of ${manifest.nVocab} tokens.`,
        { token: bad, param: 'tokens' },
      )
  } else {
    if (from < 1 || from > last || !cutAllowed(manifest, from))
      throw outOfRange(
        `a span starts at a block in [1, ${last}] where the manifest allows a cut, not ${from}; from block 0, send ` +
          `tokens.`,
        {
          from,
          param: 'input.from_block',
        },
      )
    const seam = seamAt(manifest, from)
    if (seamSideValues(seam) > 0)
      throw new NeuronError(
        'unsupported_seam',
        `the seam before block ${from} carries token ids or indices besides the state; start the span at another ` +
          `block.`,
        {
          param: 'input.from_block',
        },
      )
    checkValues('input.data', r.input.state, seam.values)
  }
  if (r.add !== undefined) {
    if (
      !Number.isInteger(r.add.block) ||
      r.add.block < from ||
      r.add.block > r.afterBlock ||
      !cutAllowed(manifest, r.add.block + 1)
    )
      throw outOfRange(
        `add.block ${r.add.block} is outside [${from}, ${r.afterBlock}] or not a cut the manifest allows.`,
        {
          block: r.add.block,
          param: 'add.block',
        },
      )
    checkValues(
      'add.vector',
      { tokens: 1, width: r.add.vector.length, data: r.add.vector },
      seamAt(manifest, r.add.block + 1).values,
    )
  }
}

/** A state or vector must be `width` wide, rows × width values, each finite and at most MAX_HIDDEN_ABS in size. */
function checkValues(what: string, s: HiddenState, width: number): void {
  if (s.width !== width || s.data.length !== s.tokens * s.width || s.data.length > MAX_HIDDEN_VALUES)
    throw new NeuronError(
      'wrong_width',
      `${what} has ${s.data.length} values (${s.tokens} × ${s.width}); this cut carries ${width} values per token.`,
      {
        width,
        got: s.width,
        param: what,
      },
    )
  for (const v of s.data)
    if (!(Math.abs(v) <= MAX_HIDDEN_ABS))
      throw new NeuronError(
        'bad_request',
        `${what} holds ${v}; values are finite and at most ${MAX_HIDDEN_ABS} in size.`,
        { param: what },
      )
}

/** Runs the request's blocks, cut where it adds its vector, and answers the state after `afterBlock`. */
export async function runToBlock(client: HopOpener, manifest: Manifest, r: StateRequest): Promise<StateResult> {
  checkStateRequest(manifest, r)
  const from = 'from' in r.input ? r.input.from : 0
  const rows = 'tokens' in r.input ? r.input.tokens.length : r.input.state.tokens
  const cuts = [from, ...(r.add !== undefined && r.add.block < r.afterBlock ? [r.add.block + 1] : []), r.afterBlock + 1]
  let input: HopInput = 'tokens' in r.input ? tokenInput(Int32Array.from(r.input.tokens)) : stateInput(r.input.state)
  const ids = 'tokens' in r.input ? Int32Array.from(r.input.tokens) : undefined
  const receipts: { session: string; receipts: Receipt[] }[] = []
  const route: StateResult['route'][number][] = []
  for (let i = 0; i + 1 < cuts.length; i++) {
    const blocks = [cuts[i], cuts[i + 1]] as [number, number]
    const span = await openSpan(client, manifest, blocks, rows, rows, r)
    try {
      const out = await span.step(1, 0, input, ids)
      input = hiddenOf(out, blocks)
      if (r.add !== undefined && r.add.block === blocks[1] - 1) input = added(input, r.add.vector)
    } finally {
      receipts.push({ session: span.session, receipts: span.receipts })
      route.push(...span.route)
      await span.close()
    }
  }
  return { state: stateOf(input), fromBlock: from, afterBlock: r.afterBlock, receipts, route }
}

export interface SteeredGeneration {
  readonly prompt: readonly number[]
  readonly maxTokens: number
  readonly add?: Steering
  readonly sampling?: SamplingParams
  /** Stops at a token the model ends generations with (the tokenizer's judgement). */
  readonly isEnd?: (token: number) => boolean
  readonly signal?: AbortSignal
}

/**
 * Generates with `add.vector` added to every row of the state after `add.block`, the prompt's and each new token's:
 * the route is cut there, so the client adds it between two spans. Without `add`, one span runs the whole model.
 */
export async function generateSteered(
  client: HopOpener,
  manifest: Manifest,
  g: SteeredGeneration,
): Promise<{ tokens: number[]; receipts: { session: string; receipts: readonly Receipt[] }[] }> {
  const { nLayer } = manifest
  if (g.add !== undefined)
    checkStateRequest(manifest, { input: { tokens: g.prompt }, afterBlock: g.add.block, add: g.add })
  else checkStateRequest(manifest, { input: { tokens: g.prompt }, afterBlock: 0 })
  if (
    !Number.isInteger(g.maxTokens) ||
    g.maxTokens < 1 ||
    g.prompt.length + g.maxTokens > (manifest.contextLength || MAX_HIDDEN_TOKENS)
  )
    throw new NeuronError(
      'too_many_tokens',
      `maxTokens ${g.maxTokens} with a ${g.prompt.length}-token prompt does not fit the model's context.`,
    )
  const cuts = g.add === undefined ? [0, nLayer] : [0, g.add.block + 1, nLayer]
  const total = g.prompt.length + g.maxTokens
  const spans: SpanSession[] = []
  try {
    for (let i = 0; i + 1 < cuts.length; i++)
      spans.push(
        await openSpan(client, manifest, [cuts[i], cuts[i + 1]] as [number, number], total, g.prompt.length, {
          ...g,
          sampling: g.sampling ?? {},
        }),
      )
    const tokens: number[] = []
    let ids = Int32Array.from(g.prompt)
    let position = 0
    for (let step = 1; tokens.length < g.maxTokens && !g.signal?.aborted; step++) {
      let input = tokenInput(ids)
      let out: SpanOutput | undefined
      for (const span of spans) {
        out = await span.step(step, position, input, ids)
        if (out.kind === 'hidden') input = g.add === undefined ? out.state : added(out.state, g.add.vector)
      }
      if (out?.kind !== 'token') throw new NeuronError('internal', 'the last span answered no token')
      tokens.push(out.sampled.token)
      if (g.isEnd?.(out.sampled.token) === true) break
      position += ids.length
      ids = Int32Array.of(out.sampled.token)
    }
    return { tokens, receipts: spans.map((s) => ({ session: s.session, receipts: s.receipts })) }
  } finally {
    await Promise.all(spans.map((s) => s.close()))
  }
}

async function openSpan(
  client: HopOpener,
  manifest: Manifest,
  blocks: [number, number],
  maxTokens: number,
  promptTokens: number,
  r: Pick<StateRequest, 'beforeSpan' | 'sessions' | 'signal'> & { sampling?: SamplingParams },
): Promise<SpanSession> {
  const session = r.sessions?.()
  if (session !== undefined) await r.beforeSpan?.(session, blocks, maxTokens)
  return SpanSession.open(client, {
    modelId: manifest.modelId,
    blocks,
    maxTokens,
    promptTokens,
    ...(session === undefined ? {} : { session }),
    ...(r.sampling === undefined ? {} : { sampling: r.sampling }),
    ...(r.signal === undefined ? {} : { signal: r.signal }),
  })
}

function hiddenOf(out: SpanOutput, blocks: readonly [number, number]): HopInput {
  if (out.kind !== 'hidden')
    throw new NeuronError('internal', `span [${blocks[0]}, ${blocks[1]}) answered a token, not a hidden state`)
  return out.state
}

/** A state's values as f32 (copied out of the frame; side values dropped). */
export function stateOf(input: HopInput): HiddenState {
  const count = input.tokens * input.width
  const bytes = input.payload.slice(0, count * (input.dtype === 'f16' ? 2 : 4))
  const data = input.dtype === 'f16' ? fromF16(new Uint16Array(bytes.buffer)) : new Float32Array(bytes.buffer)
  return { tokens: input.tokens, width: input.width, data }
}

/** A caller's state as the first hop's input. */
function stateInput(s: HiddenState): HopInput {
  const data = Float32Array.from(s.data)
  return { dtype: 'f32', tokens: s.tokens, width: s.width, payload: new Uint8Array(data.buffer) }
}

/** `state` with `vector` added to every row (its side values, if any, kept after the values). */
function added(state: HopInput, vector: Float32Array): HopInput {
  const { data } = stateOf(state)
  for (let i = 0; i < data.length; i++) data[i] = (data[i] as number) + (vector[i % state.width] as number)
  const side = state.payload.subarray(state.tokens * state.width * (state.dtype === 'f16' ? 2 : 4))
  const payload = new Uint8Array(data.byteLength + side.byteLength)
  payload.set(new Uint8Array(data.buffer), 0)
  payload.set(side, data.byteLength)
  return { ...state, dtype: 'f32', payload }
}
