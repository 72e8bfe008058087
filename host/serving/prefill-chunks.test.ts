// Chunked prefill on one real runtime (stories260K, 1 thread): a prompt longer than the chunk bound runs a chunk per
// tick beside the other sessions' decode steps, and its answer is the whole prompt's, to the batch-shape tolerance.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ForwardOutput, ShardRuntime } from '../../native'
import { maxAbsDiff, packedStories, removePackedStories, THREADS } from '../../test/native'
import { StepBatcher } from './step-batcher'

const PROMPT = Array.from({ length: 300 }, (_, i) => (i === 0 ? 1 : 260 + ((i * 37) % 240)))
const DECODERS = 4
const CHUNK = 32
/**
 * Largest difference allowed between a prompt run whole and in chunks, in the values' own units: the chunks' graphs
 * have other shapes (and other sessions' rows beside them), so ggml's kernels sum in another order. Measured on this
 * model: 1.9e-6 on the logits, 0 on hidden states (chunks of 32 beside 4 decoders); the bound leaves room for another
 * CPU's kernel variant.
 */
const CHUNK_TOLERANCE = 1e-3

let runtime: ShardRuntime

/** The largest difference between two outputs of the same length. */
function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length)
  return maxAbsDiff(a, b)
}

/** `steps` greedy decode steps of a session whose prompt is one token, counting each answer into `answered`. */
async function decoder(
  batcher: StepBatcher,
  k: number,
  steps: number,
  answered: number[],
  roundTripMs = 0,
): Promise<void> {
  const session = runtime.openSession({ maxTokens: steps + 2 })
  try {
    let token = 300 + k
    for (let n = 0; n < steps; n++) {
      await batcher.forward(session, Int32Array.of(token), {})
      token = session.sample({ temperature: 0 }).token
      answered.push(k)
      // a client's round trip: the batcher idles until its next step comes
      if (roundTripMs > 0) await new Promise((r) => setTimeout(r, roundTripMs))
    }
  } finally {
    batcher.forget(session)
    session.close()
  }
}

describe('chunked prefill', () => {
  beforeAll(async () => {
    const { manifest, dir } = await packedStories()
    runtime = await ShardRuntime.load({
      artifacts: manifest.artifacts.map((a) => join(dir, a.file)),
      blocks: [0, 5],
      embed: true,
      head: true,
      threads: THREADS,
    })
  })
  afterAll(() => {
    runtime?.dispose()
    removePackedStories()
  })

  /** The prompt through `batcher` on a session of `blocks`, while `decoders` other sessions decode beside it. */
  async function prompt(batcher: StepBatcher, blocks: [number, number], decoders: number, roundTripMs = 0) {
    const answered: number[] = []
    const session = runtime.openSession({ maxTokens: PROMPT.length + 4, blocks })
    try {
      const running = Array.from({ length: decoders }, (_, k) => decoder(batcher, k, 400, answered, roundTripMs))
      // the decoders are stepping when the prompt arrives
      while (decoders > 0 && answered.length < decoders) await new Promise((r) => setTimeout(r, 1))
      const before = answered.length
      const output = await batcher.forward(session, Int32Array.from(PROMPT), { positions: 0, hiddenType: 'f32' })
      const during = answered.length - before
      const next = output.kind === 'logits' ? session.sample({ temperature: 0 }).token : undefined
      await Promise.all(running)
      return { output, during, next }
    } finally {
      session.close()
    }
  }

  it(
    'a long prompt beside decoding sessions runs a chunk per tick: they step between its chunks, and its logits ' +
      'and next token are the whole prompt’s',
    async () => {
      const whole = await prompt(new StepBatcher(runtime, { prefillChunkTokens: 0 }), [0, 5], DECODERS)
      const chunked = new StepBatcher(runtime, { prefillChunkTokens: CHUNK })
      const inChunks = await prompt(chunked, [0, 5], DECODERS)
      expect(chunked.stats.chunkedPrompts).toBe(1)
      expect(inChunks.output.rows).toBe(1)
      expect(maxDiff(inChunks.output.data, whole.output.data)).toBeLessThan(CHUNK_TOLERANCE)
      expect(inChunks.next).toBe(whole.next)
      // run whole, the prompt is one graph: each decoder steps at most once while it runs; in chunks of 32, about once
      // per chunk (300 / 32: 10 chunks)
      expect(whole.during).toBeLessThanOrEqual(2 * DECODERS)
      expect(inChunks.during).toBeGreaterThanOrEqual(DECODERS * (Math.ceil(PROMPT.length / CHUNK) - 2))
    },
  )

  it(
    'decoders whose next steps are still on their way (a round trip) are waited for as decoding: the prompt ' +
      'still runs in chunks between their steps',
    async () => {
      const chunked = new StepBatcher(runtime, { prefillChunkTokens: CHUNK })
      const withTrips = await prompt(chunked, [0, 5], DECODERS, 20)
      // 10 chunks at least (300 / 32), not one piece of 300 (the batcher is often idle between the decoders' steps)
      expect(chunked.stats.promptPieces).toBeGreaterThanOrEqual(Math.ceil(PROMPT.length / CHUNK))
      expect(withTrips.during).toBeGreaterThanOrEqual(DECODERS)
    },
  )

  it('a prompt mid-route answers every row’s hidden state, joined in order as one forward gives them', async () => {
    const whole = (await prompt(new StepBatcher(runtime, { prefillChunkTokens: 0 }), [0, 2], DECODERS)).output
    const inChunks = (await prompt(new StepBatcher(runtime, { prefillChunkTokens: CHUNK }), [0, 2], DECODERS)).output
    expect(inChunks.kind).toBe('hidden')
    expect(inChunks.rows).toBe(PROMPT.length)
    expect(inChunks.cols).toBe(whole.cols)
    expect(maxDiff(inChunks.data, whole.data)).toBeLessThan(CHUNK_TOLERANCE)
  })

  it('a prompt alone runs whole (nobody waits on it), up to a ubatch of rows a graph', async () => {
    const batcher = new StepBatcher(runtime, { prefillChunkTokens: CHUNK })
    const alone = await prompt(batcher, [0, 5], 0)
    // 300 rows in one graph (MAX_BATCH_ROWS is 512), not ten chunks of 32
    expect(batcher.stats.chunkedPrompts).toBe(0)
    expect(batcher.stats.batches).toBe(1)
    const whole = await prompt(new StepBatcher(runtime, { prefillChunkTokens: 0 }), [0, 5], 0)
    expect(maxDiff((alone.output as ForwardOutput).data, whole.output.data)).toBeLessThan(CHUNK_TOLERANCE)
  })

  it('a prompt right after another session closed runs whole: a closed session decodes no more', async () => {
    const batcher = new StepBatcher(runtime, { prefillChunkTokens: CHUNK })
    // a chat's last step, and its session closed (as a host closes it at the client's close), moments ago
    await decoder(batcher, 0, 3, [])
    const before = batcher.stats.batches
    await prompt(batcher, [0, 5], 0)
    expect(batcher.stats.chunkedPrompts).toBe(0)
    expect(batcher.stats.batches - before).toBe(1)
  })

  it('refuses a chunk bound it cannot batch, saying which are allowed', () => {
    expect(() => new StepBatcher(runtime, { prefillChunkTokens: 65 })).toThrow(/from 0 .* to 64; got 65/)
    expect(() => new StepBatcher(runtime, { prefillChunkTokens: 1.5 })).toThrow(/integer/)
  })
})
