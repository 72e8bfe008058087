// The hidden-state SDK (client/index.ts) on a real swarm on stories260K, two hosts splitting its 5 blocks at 3: the
// state after each block equals the PyTorch reference's, steering changes what is generated only when the vector
// is not zero, a span run equals the slice of the full run, bad requests get typed errors, and the key pays.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NodeIdentity } from '../identity/keys'
import { MAX_HIDDEN_TOKENS, type NeuronError } from '../protocol'
import { STORIES_260K, scratchDir } from '../test/models'
import { type InProcessSwarm, startSwarm } from '../test/programs'
import { hasTorch, NO_TORCH, relativeError, runReferenceAsync, SEAM_TOLERANCE } from '../test/reference'
import { consumerAccount } from '../tracker/ledger/accounts'
import { connect, type Swarm } from './index'

let swarm: InProcessSwarm
let sdk: Swarm
let cleanup: () => Promise<void> = async () => {}
const key = NodeIdentity.generate()
const scratch = mkdtempSync(join(tmpdir(), 'neuron-sdk-ref-'))
const PROMPT = 'Once upon a time, there was a little girl'
const model = () => swarm.manifest.modelId

async function typedError(p: Promise<unknown>): Promise<NeuronError> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeDefined()
  return error as NeuronError
}

describe('hidden-state SDK on a real swarm of two hosts (blocks [0, 3) and [3, 5))', () => {
  beforeAll(async () => {
    let dir: string
    ;({ dir, cleanup } = await scratchDir())
    swarm = await startSwarm(dir, STORIES_260K, [
      [0, 3],
      [3, 5],
    ])
    sdk = await connect({ tracker: swarm.tracker.url, key })
  }, 180_000)
  afterAll(async () => {
    await sdk?.close()
    await swarm?.close()
    await cleanup()
    rmSync(scratch, { recursive: true, force: true })
  })

  it.skipIf(!hasTorch)(
    `reads the state after every block equal to reference/run.py's within ${SEAM_TOLERANCE}${NO_TORCH}`,
    async () => {
      const { nLayer, nEmbd } = await sdk.model(model())
      const first = await sdk.hiddenStates({ model: model(), prompt: PROMPT, afterBlock: 0 })
      const ids = [...(first.tokenIds ?? [])]
      const ref = await runReferenceAsync(scratch, [STORIES_260K], ids)
      const errors: number[] = []
      for (let k = 0; k <= nLayer - 2; k++) {
        const { state, route } =
          k === 0 ? first : await sdk.hiddenStates({ model: model(), prompt: ids, afterBlock: k })
        expect([state.tokens, state.width]).toEqual([ids.length, nEmbd])
        // after block 3 the state crossed the seam between the two hosts
        if (k === 3)
          expect(route.map((h) => h.blocks)).toEqual([
            [0, 3],
            [3, 4],
          ])
        errors.push(relativeError(state.data, ref.hidden[k]?.data ?? []))
      }
      console.log(
        `SDK hidden states vs reference, rel err after blocks 0..${nLayer - 2}: ` +
          `${errors.map((e) => e.toExponential(1)).join(' ')}`,
      )
      for (const e of errors) expect(e).toBeLessThan(SEAM_TOLERANCE)
    },
  )

  it('adds a vector after a block: the state read there is h + v, and the next blocks run on it', async () => {
    const { nEmbd } = await sdk.model(model())
    const vector = Float32Array.from({ length: nEmbd }, (_, i) => (i % 2 === 0 ? 1.5 : -0.5))
    const plain = await sdk.hiddenStates({ model: model(), prompt: PROMPT, afterBlock: 1 })
    const steered = await sdk.hiddenStates({ model: model(), prompt: PROMPT, afterBlock: 1, add: { block: 1, vector } })
    for (let i = 0; i < plain.state.data.length; i++)
      expect(steered.state.data[i]).toBeCloseTo((plain.state.data[i] as number) + (vector[i % nEmbd] as number), 4)
    const later = await sdk.hiddenStates({ model: model(), prompt: PROMPT, afterBlock: 3 })
    const laterSteered = await sdk.hiddenStates({
      model: model(),
      prompt: PROMPT,
      afterBlock: 3,
      add: { block: 1, vector },
    })
    expect(relativeError(laterSteered.state.data, later.state.data)).toBeGreaterThan(0.05)
  })

  it('steers generation: a zero vector changes nothing, a large one changes the next token', async () => {
    const { nEmbd } = await sdk.model(model())
    const plain = await sdk.generate({ model: model(), prompt: PROMPT, maxTokens: 8 })
    const zero = await sdk.generate({
      model: model(),
      prompt: PROMPT,
      maxTokens: 8,
      add: { block: 2, vector: new Float32Array(nEmbd) },
    })
    expect(zero.tokens).toEqual(plain.tokens)
    expect(zero.text).toBe(plain.text)
    // the state after block 2, pushed far along one direction: the head sees another residual stream
    const large = Float32Array.from({ length: nEmbd }, (_, i) => (i % 3 === 0 ? 40 : -40))
    const steered = await sdk.generate({
      model: model(),
      prompt: PROMPT,
      maxTokens: 8,
      add: { block: 2, vector: large },
    })
    console.log(`generation: plain ${JSON.stringify(plain.text)}, steered ${JSON.stringify(steered.text)}`)
    expect(steered.tokens[0]).not.toBe(plain.tokens[0])
  })

  it('runs a span [2, 4) on the state after block 1 equal to the full run’s state after block 3', async () => {
    const after1 = await sdk.hiddenStates({ model: model(), prompt: PROMPT, afterBlock: 1 })
    const after3 = await sdk.hiddenStates({ model: model(), prompt: PROMPT, afterBlock: 3 })
    const span = await sdk.runSpan({ model: model(), blocks: [2, 4], input: after1.state })
    expect([span.fromBlock, span.afterBlock]).toEqual([2, 3])
    expect(span.route.map((h) => h.blocks)).toEqual([
      [2, 3],
      [3, 4],
    ])
    expect(relativeError(span.state.data, after3.state.data)).toBeLessThan(SEAM_TOLERANCE)
  })

  it(
    'refuses out-of-range blocks, wrong widths and ' + 'oversized inputs with typed errors, and keeps serving',
    async () => {
      const { nLayer, nEmbd } = await sdk.model(model())
      expect(
        (await typedError(sdk.hiddenStates({ model: model(), prompt: PROMPT, afterBlock: nLayer - 1 }))).code,
      ).toBe('block_out_of_range')
      expect(
        (
          await typedError(
            sdk.hiddenStates({
              model: model(),
              prompt: PROMPT,
              afterBlock: 1,
              add: { block: 2, vector: new Float32Array(nEmbd) },
            }),
          )
        ).code,
      ).toBe('block_out_of_range')
      expect(
        (
          await typedError(
            sdk.hiddenStates({
              model: model(),
              prompt: PROMPT,
              afterBlock: 1,
              add: { block: 1, vector: new Float32Array(nEmbd + 1) },
            }),
          )
        ).code,
      ).toBe('wrong_width')
      const tooMany = Array.from({ length: MAX_HIDDEN_TOKENS + 1 }, () => 1)
      expect((await typedError(sdk.hiddenStates({ model: model(), prompt: tooMany, afterBlock: 1 }))).code).toBe(
        'too_many_tokens',
      )
      const nan = { tokens: 1, width: nEmbd, data: new Float32Array(nEmbd).fill(Number.NaN) }
      expect((await typedError(sdk.runSpan({ model: model(), blocks: [1, 3], input: nan }))).code).toBe('bad_request')
      const ok = await sdk.hiddenStates({ model: model(), prompt: PROMPT, afterBlock: 2 })
      expect(ok.state.width).toBe(nEmbd)
    },
  )

  it('charges the key’s account for the positions it ran', async () => {
    const account = await swarm.tracker.accounts.byPublicKey(key.publicKey)
    if (account === undefined) throw new Error('the key has no account after its runs')
    const balance = () => swarm.tracker.store.ledger.balance(consumerAccount(account.accountId))
    const before = await balance()
    const run = await sdk.hiddenStates({ model: model(), prompt: PROMPT, afterBlock: 3 })
    expect(run.chargedMicro).toBeGreaterThan(0)
    // at most: a session's KV rent is charged at its end too
    expect(await balance()).toBeLessThanOrEqual(before - run.chargedMicro)
  })
})
