import { randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { checkStateRequest, type HiddenState, runToBlock, type StateRequest } from '../../client/hidden-states'
import {
  HiddenStatesRequest,
  type HiddenStatesResponse,
  MAX_HIDDEN_TOKENS,
  type Manifest,
  NeuronError,
} from '../../protocol'
import type { StoredAccount } from '../ledger/ledger-store'
import { hopCharge, maxCost, type PricingOptions, priceOf } from '../ledger/pricing'
import { authenticate } from './auth'
import type { GatewayDeps } from './deps'
import { GatewayError } from './errors'
import { abortOnClose, parse, readBody, sendJson } from './http'
import type { PromptTokenizers } from './prompt-tokenizers'
import type { RateLimit } from './rate-limit'

/** The SDK's refusals of a request that the caller can fix: a 400 naming the field. */
const CALLER_ERRORS = new Set([
  'block_out_of_range',
  'too_many_tokens',
  'wrong_width',
  'bad_request',
  'unsupported_seam',
])

/**
 * POST /v1/hidden_states: the state after a block (client/hidden-states.ts) over HTTP, for callers outside Node
 * (Python, PyTorch). Authenticated by API key and rate-limited like the OpenAI endpoints; each span's session is
 * held and sponsored for the caller's account before it is routed, and charged by the hops' receipts.
 */
export class HiddenStatesEndpoint {
  constructor(
    private readonly deps: Pick<
      GatewayDeps,
      'catalog' | 'accounts' | 'admits' | 'holds' | 'metering' | 'client' | 'sponsor'
    >,
    private readonly pricing: PricingOptions,
    private readonly rateLimit: RateLimit,
    private readonly tokenizers: PromptTokenizers,
  ) {}

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const account = await authenticate(req, this.deps)
    await this.rateLimit.check(account)
    const body = parse(HiddenStatesRequest, await readBody(req))
    const { manifest } = this.deps.catalog.get(body.model) // 404 before any work
    const request: StateRequest = {
      input:
        body.input === undefined
          ? { tokens: await this.promptTokens(body) }
          : { from: body.input.from_block, state: rowsOf(body.input, 'input.data') },
      afterBlock: body.after_block,
      ...(body.add === undefined ? {} : { add: { block: body.add.block, vector: vectorOf(body.add.vector) } }),
    }
    callerError(() => checkStateRequest(manifest, request))
    const held: string[] = []
    let charged = 0
    try {
      const client = await this.deps.client()
      const result = await runToBlock(client.hopOpener, manifest, {
        ...request,
        signal: abortOnClose(res),
        sessions: () => randomBytes(16).toString('hex'),
        beforeSpan: async (session, _blocks, rows) => {
          await this.hold(session, account, manifest, rows)
          held.push(session)
          this.deps.sponsor?.(session, account.accountId)
        },
      })
      const price = priceOf(manifest, this.pricing)
      for (const { session, receipts } of result.receipts) {
        if (receipts.length === 0) continue
        await this.deps.metering.bind(session, account.accountId)
        const verdicts = await this.deps.metering.settle(session, receipts)
        // A receipt its host handed in first was charged then, at the same price.
        verdicts.forEach((v, i) => {
          const r = receipts[i]
          charged += v.ok
            ? v.charged
            : v.code === 'already_settled' && r !== undefined
              ? hopCharge(price, manifest.nLayer, r)
              : 0
        })
      }
      const response: HiddenStatesResponse = {
        object: 'hidden_states',
        model: body.model,
        from_block: result.fromBlock,
        after_block: result.afterBlock,
        tokens: result.state.tokens,
        width: result.state.width,
        encoding: body.encoding,
        data: encode(result.state, body.encoding),
        route: result.route.map((h) => ({ host_id: h.hostId, blocks: [h.blocks[0], h.blocks[1]] })),
        ...('tokens' in request.input ? { token_ids: [...request.input.tokens] } : {}),
        usage: {
          positions: result.state.tokens,
          blocks: result.afterBlock + 1 - result.fromBlock,
          charged_micro: charged,
        },
      }
      sendJson(res, 200, response)
    } finally {
      // A hold whose release fails stays until it is idle past its expiry, then any instance releases it.
      for (const session of held) await this.deps.holds.release(session).catch(() => {})
    }
  }

  /**
   * Sets aside what a span's one step may cost (its rows as prompt,
   * one step's completion share), refusing 402 when it cannot.
   */
  private async hold(session: string, account: StoredAccount, manifest: Manifest, rows: number): Promise<void> {
    const cost = maxCost(priceOf(manifest, this.pricing), manifest.nLayer, rows, 1)
    await this.deps.holds.take(session, account.accountId, (available) => {
      if (available < cost)
        throw new GatewayError(
          402,
          'insufficient_quota',
          'insufficient_credits',
          `account ${account.accountId} has ${available} micro-credits available; running ${rows} tokens through ` +
            `these blocks may cost ${cost}. Ask the operator for a grant.`,
        )
      return { heldMicro: cost, maxTokens: rows }
    })
  }

  private async promptTokens(body: HiddenStatesRequest): Promise<number[]> {
    if (body.tokens !== undefined) return body.tokens
    const tokenized = await (await this.tokenizers.get(body.model)).encode(body.prompt ?? '', MAX_HIDDEN_TOKENS)
    if (tokenized.ids === undefined)
      throw new GatewayError(
        400,
        'invalid_request_error',
        'too_many_tokens',
        `the prompt is ${tokenized.count} tokens; a hidden-state run takes at most ${MAX_HIDDEN_TOKENS}.`,
        'prompt',
      )
    return tokenized.ids
  }
}

/** Runs `check`, turning the SDK's refusals of the caller's request into a 400 naming the field. */
function callerError(check: () => void): void {
  try {
    check()
  } catch (error) {
    if (error instanceof NeuronError && CALLER_ERRORS.has(error.code)) {
      const param = typeof error.details.param === 'string' ? error.details.param : null
      throw new GatewayError(400, 'invalid_request_error', error.code, error.message, param)
    }
    throw error
  }
}

/** base64 of little-endian f32 as values; 400 when its length is not a whole number of them. */
function fromBase64(data: string, param: string): Float32Array {
  const bytes = Buffer.from(data, 'base64')
  if (bytes.length % 4 !== 0)
    throw new GatewayError(
      400,
      'invalid_request_error',
      'invalid_value',
      `${param} decodes to ${bytes.length} bytes, not a whole number of f32 values.`,
      param,
    )
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length))
}

function vectorOf(v: string | number[]): Float32Array {
  return typeof v === 'string' ? fromBase64(v, 'add.vector') : Float32Array.from(v)
}

/** The input state: `tokens` rows, given as rows of numbers or as base64 (then its width is its values / tokens). */
function rowsOf(input: { tokens: number; data: string | number[][] }, param: string): HiddenState {
  const wrong = (message: string) => new GatewayError(400, 'invalid_request_error', 'wrong_width', message, param)
  if (typeof input.data === 'string') {
    const data = fromBase64(input.data, param)
    if (data.length === 0 || data.length % input.tokens !== 0)
      throw wrong(`${param} holds ${data.length} values, not ${input.tokens} rows of equal width.`)
    return { tokens: input.tokens, width: data.length / input.tokens, data }
  }
  const width = input.data[0]?.length ?? 0
  if (input.data.length !== input.tokens || input.data.some((row) => row.length !== width))
    throw wrong(
      `${param} has ${input.data.length} rows (input.tokens says ${input.tokens}), each of one width (the first is ` +
        `${width}).`,
    )
  return { tokens: input.tokens, width, data: Float32Array.from(input.data.flat()) }
}

function encode(state: HiddenState, encoding: 'f32-base64' | 'json'): string | number[][] {
  if (encoding === 'f32-base64')
    return Buffer.from(state.data.buffer, state.data.byteOffset, state.data.byteLength).toString('base64')
  return Array.from({ length: state.tokens }, (_, r) =>
    Array.from(state.data.subarray(r * state.width, (r + 1) * state.width)),
  )
}
