// POST /v1/hidden_states on a real swarm on stories260K, two hosts splitting its 5 blocks at 3: the state after a
// block equals reference/run.py's, steering and span runs behave as the SDK's, bad requests get typed 400s while the
// tracker keeps serving, and the API key's account pays for the positions computed.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HiddenStatesResponse, MAX_HIDDEN_TOKENS } from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { createAccount, type InProcessSwarm, startGatewaySwarm } from '../../test/programs'
import { hasTorch, NO_TORCH, relativeError, runReferenceAsync, SEAM_TOLERANCE } from '../../test/reference'
import { consumerAccount } from '../ledger/accounts'
import { hopCharge, priceOf } from '../ledger/pricing'

const ADMIN = 'admin-token-for-hidden-states'
const RATE_LIMIT = 40
const PROMPT = 'Once upon a time, there was a little girl'
let swarm: InProcessSwarm
let apiKey = ''
let accountId = ''
let cleanup: () => Promise<void> = async () => {}
const scratch = mkdtempSync(join(tmpdir(), 'neuron-gateway-ref-'))

async function post(
  body: unknown,
  key: string | null = apiKey,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${swarm.tracker.url}/v1/hidden_states`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key === null ? {} : { authorization: `Bearer ${key}` }) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

/** A successful answer, parsed with the protocol's schema, its state as f32. */
async function states(body: Record<string, unknown>): Promise<{ answer: HiddenStatesResponse; data: Float32Array }> {
  const res = await post({ model: swarm.manifest.modelId, ...body })
  if (res.status !== 200) throw new Error(`expected 200, got ${res.status}: ${JSON.stringify(res.body)}`)
  const answer = HiddenStatesResponse.parse(res.body)
  const data =
    typeof answer.data === 'string'
      ? new Float32Array(new Uint8Array(Buffer.from(answer.data, 'base64')).buffer)
      : Float32Array.from(answer.data.flat())
  expect(data.length).toBe(answer.tokens * answer.width)
  return { answer, data }
}

const base64 = (values: Float32Array) =>
  Buffer.from(values.buffer, values.byteOffset, values.byteLength).toString('base64')

describe('POST /v1/hidden_states on a real swarm of two hosts (blocks [0, 3) and [3, 5))', () => {
  beforeAll(async () => {
    let dir: string
    ;({ dir, cleanup } = await scratchDir())
    ;({ swarm, apiKey, accountId } = await startGatewaySwarm(
      dir,
      STORIES_260K,
      { adminToken: ADMIN, requestsPerMinute: RATE_LIMIT },
      'hidden-states',
    ))
  }, 180_000)
  afterAll(async () => {
    await swarm?.close()
    await cleanup()
    rmSync(scratch, { recursive: true, force: true })
  })

  it.skipIf(!hasTorch)(
    `answers the state after blocks 1 and 3 (across the hosts' seam) equal to reference/run.py's within ` +
      `${SEAM_TOLERANCE}${NO_TORCH}`,
    async () => {
      const after3 = await states({ prompt: PROMPT, after_block: 3 })
      expect(after3.answer).toMatchObject({
        object: 'hidden_states',
        from_block: 0,
        after_block: 3,
        width: swarm.manifest.nEmbd,
        encoding: 'f32-base64',
      })
      // the state crossed the seam between the two hosts
      expect(after3.answer.route.map((h) => h.blocks)).toEqual([
        [0, 3],
        [3, 4],
      ])
      const ids = after3.answer.token_ids ?? []
      expect(after3.answer.tokens).toBe(ids.length)
      const after1 = await states({ tokens: ids, after_block: 1, encoding: 'json' })
      expect(Array.isArray(after1.answer.data)).toBe(true)
      const ref = await runReferenceAsync(scratch, [STORIES_260K], ids)
      const errors = [
        relativeError(after1.data, ref.hidden[1]?.data ?? []),
        relativeError(after3.data, ref.hidden[3]?.data ?? []),
      ]
      console.log(
        `HTTP hidden states vs reference, rel err after blocks 1 and 3: ` +
          `${errors.map((e) => e.toExponential(1)).join(' ')}`,
      )
      for (const e of errors) expect(e).toBeLessThan(SEAM_TOLERANCE)
    },
  )

  it('steers: a zero vector after block 1 changes nothing after block 3, a large one changes it', async () => {
    const width = swarm.manifest.nEmbd
    const plain = await states({ prompt: PROMPT, after_block: 3 })
    const zero = await states({ prompt: PROMPT, after_block: 3, add: { block: 1, vector: new Array(width).fill(0) } })
    expect(relativeError(zero.data, plain.data)).toBeLessThan(1e-6)
    const large = Float32Array.from({ length: width }, (_, i) => (i % 3 === 0 ? 40 : -40))
    const steered = await states({ prompt: PROMPT, after_block: 3, add: { block: 1, vector: base64(large) } })
    expect(relativeError(steered.data, plain.data)).toBeGreaterThan(0.1)
  })

  it('runs a span [2, 4) on a given state equal to the slice of the full run', async () => {
    const after1 = await states({ prompt: PROMPT, after_block: 1 })
    const after3 = await states({ prompt: PROMPT, after_block: 3 })
    const { tokens, width } = after1.answer
    const span = await states({ input: { from_block: 2, tokens, data: base64(after1.data) }, after_block: 3 })
    expect(span.answer).toMatchObject({ from_block: 2, after_block: 3, tokens, width })
    expect(relativeError(span.data, after3.data)).toBeLessThan(SEAM_TOLERANCE)
    // the same state as rows of numbers
    const rows = Array.from({ length: tokens }, (_, r) => Array.from(after1.data.subarray(r * width, (r + 1) * width)))
    const again = await states({ input: { from_block: 2, tokens, data: rows }, after_block: 3 })
    expect(relativeError(again.data, after3.data)).toBeLessThan(SEAM_TOLERANCE)
  })

  it('refuses malformed, out-of-range and oversized requests with typed 400s, and keeps serving', async () => {
    const model = swarm.manifest.modelId
    const width = swarm.manifest.nEmbd
    const refused = async (body: unknown, code: string, param: string | null) => {
      const res = await post(body)
      expect(res.status).toBe(400)
      expect(res.body).toMatchObject({
        error: { code, param, message: expect.any(String), type: 'invalid_request_error' },
      })
    }
    await refused({ model, prompt: PROMPT, after_block: 4 }, 'block_out_of_range', 'after_block')
    await refused(
      { model, prompt: PROMPT, after_block: 1, add: { block: 3, vector: new Array(width).fill(0) } },
      'block_out_of_range',
      'add.block',
    )
    await refused(
      { model, prompt: PROMPT, after_block: 1, add: { block: 1, vector: new Array(width + 1).fill(0) } },
      'wrong_width',
      'add.vector',
    )
    await refused(
      { model, input: { from_block: 2, tokens: 2, data: base64(new Float32Array(3)) }, after_block: 3 },
      'wrong_width',
      'input.data',
    )
    await refused(
      { model, input: { from_block: 2, tokens: 1, data: base64(new Float32Array(width * 2)) }, after_block: 3 },
      'wrong_width',
      'input.data',
    )
    await refused(
      { model, tokens: new Array(MAX_HIDDEN_TOKENS + 1).fill(1), after_block: 1 },
      'invalid_value',
      'tokens',
    )
    await refused({ model, tokens: [1, 999_999], after_block: 1 }, 'bad_request', 'tokens')
    await refused({ model, prompt: PROMPT, tokens: [1, 2], after_block: 1 }, 'invalid_value', 'prompt')
    await refused(
      { model, prompt: PROMPT, after_block: 1, add: { block: 1, vector: 'not base64!' } },
      'invalid_value',
      'add.vector',
    )
    await refused('{"model": ', 'invalid_json', null)
    expect((await post({ model, prompt: PROMPT, after_block: 1 }, null)).status).toBe(401)
    expect((await post({ model: 'no-such-model', prompt: PROMPT, after_block: 1 })).status).toBe(404)
    const ok = await states({ prompt: PROMPT, after_block: 2 })
    expect(ok.answer.width).toBe(width)
  })

  it('charges the API key’s account for the positions computed', async () => {
    const balance = () => swarm.tracker.store.ledger.balance(consumerAccount(accountId))
    const before = await balance()
    const { answer } = await states({ prompt: PROMPT, after_block: 3 })
    expect(answer.usage).toMatchObject({ positions: answer.tokens, blocks: 4 })
    // each hop's receipt charges its blocks' share of the prompt's price, as a chat's prefill does
    const price = priceOf(swarm.manifest, {})
    const expected = answer.route.reduce(
      (sum, h) => sum + hopCharge(price, swarm.manifest.nLayer, { step: 1, tokens: answer.tokens, blocks: h.blocks }),
      0,
    )
    expect(answer.usage.charged_micro).toBe(expected)
    expect(expected).toBeGreaterThan(0)
    // at most: a session's KV rent is charged at its end too
    expect(await balance()).toBeLessThanOrEqual(before - answer.usage.charged_micro)
  })

  it('refuses an account that cannot pay with a 402 before routing anything', async () => {
    const poor = await createAccount(swarm.tracker.url, ADMIN, { name: 'poor', grant_micro: 0 })
    const res = await post({ model: swarm.manifest.modelId, prompt: PROMPT, after_block: 3 }, poor.apiKey)
    expect(res.status).toBe(402)
    expect(res.body).toMatchObject({ error: { code: 'insufficient_credits', type: 'insufficient_quota' } })
  })
  // last: it spends the account's requests for this minute
  it('rate-limits the account with 429s shared with the OpenAI endpoints', async () => {
    let status = 0
    let body: Record<string, unknown> = {}
    for (let i = 0; i <= RATE_LIMIT && status !== 429; i++)
      ({ status, body } = await post({ model: swarm.manifest.modelId, after_block: 1 }))
    expect(status).toBe(429)
    expect(body).toMatchObject({ error: { code: 'rate_limit_exceeded', message: expect.stringContaining(accountId) } })
    const completion = await fetch(`${swarm.tracker.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ model: swarm.manifest.modelId, prompt: 'Once', max_tokens: 1 }),
    })
    expect(completion.status).toBe(429)
  })
})
