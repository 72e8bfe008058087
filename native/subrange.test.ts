// Per-session block sub-ranges: a runtime loaded for [a, b) serving a session on [from, to) only,
// as when the route planner uses part of a host's blocks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Manifest } from '../protocol'
import { packedStories, removePackedStories, STORIES, THREADS } from '../test/native'
import { artifactsFor } from './artifacts'
import type { NativeRuntime } from './binding'
import { ShardRuntimeError, toShardRuntimeError } from './errors'
import { oracleGreedy, oracleModel } from './oracle'
import { ShardRuntime } from './shard-runtime'
import type { ShardSession } from './shard-session'

const STEPS = 32

function expectCode(f: () => unknown, code: string): ShardRuntimeError {
  let err: unknown
  try {
    f()
  } catch (e) {
    err = e
  }
  expect(err).toBeInstanceOf(ShardRuntimeError)
  expect((err as ShardRuntimeError).code).toBe(code)
  return err as ShardRuntimeError
}

async function expectCodeAsync(p: Promise<unknown>, code: string): Promise<ShardRuntimeError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(ShardRuntimeError)
  expect((err as ShardRuntimeError).code).toBe(code)
  return err as ShardRuntimeError
}

/** Greedy tokens through a chain of sessions (prefill the prompt, then one token per step), f32 seams. */
async function greedyChain(sessions: ShardSession[], prompt: number[], steps: number): Promise<number[]> {
  const out: number[] = []
  let input = Int32Array.from(prompt)
  for (let step = 0; step < steps; step++) {
    let x: Int32Array | Float32Array | Uint16Array = input
    for (const s of sessions) {
      const res = await s.forward(x, { hiddenType: 'f32' })
      x = res.data
      expect(res.kind).toBe(s === sessions[sessions.length - 1] ? 'logits' : 'hidden')
    }
    const { token } = (sessions[sessions.length - 1] as ShardSession).sample({ temperature: 0 })
    out.push(token)
    input = Int32Array.of(token)
  }
  return out
}

describe(`per-session block sub-ranges on stories260K`, () => {
  let prompt: number[]
  let want: number[]
  let manifest: Manifest
  let dir: string
  let full: ShardRuntime // [0, 5) embed + head
  let a: ShardRuntime // [0, 3) embed
  let b: ShardRuntime // [2, 5) head
  const load = (blocks: [number, number], embed: boolean, head: boolean) =>
    ShardRuntime.load({
      artifacts: artifactsFor(manifest, dir, blocks),
      blocks,
      embed,
      head,
      threads: THREADS,
      device: 'cpu',
    })

  beforeAll(async () => {
    const model = await oracleModel(STORIES)
    prompt = model.tokenize('Once upon a time')
    want = (await oracleGreedy(model, prompt, STEPS, 512)).map((s) => s.token)
    await model.dispose()
    ;({ manifest, dir } = await packedStories())
    full = await load([0, 5], true, true)
    a = await load([0, 3], true, false)
    b = await load([2, 5], false, true)
  })
  afterAll(() => {
    full?.dispose()
    a?.dispose()
    b?.dispose()
    removePackedStories()
  })

  it('sessions on [0, 2), [2, 4), [4, 5) of one [0, 5) runtime, chained, give the oracle tokens', async () => {
    const whole = full.openSession({ maxTokens: 256 })
    const explicit = full.openSession({ maxTokens: 256, blocks: [0, 5] })
    const parts = [
      full.openSession({ maxTokens: 256, blocks: [0, 2] }),
      full.openSession({ maxTokens: 256, blocks: [2, 4] }),
      full.openSession({ maxTokens: 256, blocks: [4, 5] }),
    ]
    try {
      expect(parts.map((s) => s.blocks)).toEqual([
        [0, 2],
        [2, 4],
        [4, 5],
      ])
      expect(parts.map((s) => [s.takesTokens, s.returnsLogits])).toEqual([
        [true, false],
        [false, false],
        [false, true],
      ])
      // the cache holds only the session's blocks
      expect(parts.map((s) => s.kvBytes / whole.kvBytes)).toEqual([2 / 5, 2 / 5, 1 / 5])
      expect(await greedyChain([whole], prompt, STEPS)).toEqual(want)
      expect(await greedyChain([explicit], prompt, STEPS)).toEqual(want)
      expect(await greedyChain(parts, prompt, STEPS)).toEqual(want)
    } finally {
      for (const s of [whole, explicit, ...parts]) s.close()
    }
  })

  it(
    'runtime A [0, 3) with a session on [0, 3) + runtime B ' + '[2, 5) with a session on [3, 5) give the oracle tokens',
    async () => {
      const sa = a.openSession({ maxTokens: 256, blocks: [0, 3] })
      const sb = b.openSession({ maxTokens: 256, blocks: [3, 5] })
      try {
        expect(sb.blocks).toEqual([3, 5])
        expect(await greedyChain([sa, sb], prompt, STEPS)).toEqual(want)
      } finally {
        sa.close()
        sb.close()
      }
      // and the other way round: A's [0, 2) + B's whole [2, 5)
      const sa2 = a.openSession({ maxTokens: 256, blocks: [0, 2] })
      const sb2 = b.openSession({ maxTokens: 256 })
      try {
        expect(await greedyChain([sa2, sb2], prompt, STEPS)).toEqual(want)
      } finally {
        sa2.close()
        sb2.close()
      }
    },
  )

  it('a bad sub-range throws BAD_RANGE with the numbers', () => {
    for (const blocks of [
      [1, 1],
      [3, 2],
      [-1, 2],
      [0, 6],
      [5, 5],
    ] as [number, number][]) {
      const err = expectCode(() => full.openSession({ maxTokens: 16, blocks }), 'BAD_RANGE')
      expect(err.details, JSON.stringify(blocks)).toEqual({
        from: blocks[0],
        to: blocks[1],
        runtimeFrom: 0,
        runtimeTo: 5,
      })
      expect(err.message).toContain(`[${blocks[0]}, ${blocks[1]})`)
      expect(err.message).toContain('[0, 5)')
    }
    const err = expectCode(() => b.openSession({ maxTokens: 16, blocks: [1, 4] }), 'BAD_RANGE')
    expect(err.details).toEqual({ from: 1, to: 4, runtimeFrom: 2, runtimeTo: 5 })
    expectCode(() => a.openSession({ maxTokens: 16, blocks: [0.5, 2] }), 'BAD_RANGE')
    // the native side checks too (for callers of the binding)
    const native = (b as unknown as { native: NativeRuntime }).native
    const raw = toShardRuntimeError(
      (() => {
        try {
          native.openSession(16, 4, 3)
        } catch (e) {
          return e
        }
      })(),
    )
    expect(raw.code).toBe('BAD_RANGE')
    expect(raw.details).toEqual({ from: 4, to: 3, runtimeFrom: 2, runtimeTo: 5 })
    // other sessions keep working
    const s = full.openSession({ maxTokens: 16, blocks: [1, 3] })
    expect(s.blocks).toEqual([1, 3])
    s.close()
  })

  it('input kinds: token ids only from block 0 with embed; logits only to the last block with head', async () => {
    const nEmbd = full.info().nEmbd
    const hidden = new Float32Array(2 * nEmbd).fill(0.1)

    // an embed runtime's session starting later takes hidden states, not token ids
    const late = full.openSession({ maxTokens: 16, blocks: [2, 5] })
    expect(late.takesTokens).toBe(false)
    const err = await expectCodeAsync(late.forward(Int32Array.of(1, 2)), 'INPUT_KIND')
    expect(err.details).toEqual({ from: 2 })
    expect(err.message).toContain('block 2')
    const out = await late.forward(hidden)
    expect(out.kind).toBe('logits')
    expect([out.rows, out.cols]).toEqual([1, 512])
    late.close()

    // a session from block 0 of an embed runtime rejects hidden states
    const first = full.openSession({ maxTokens: 16, blocks: [0, 2] })
    await expectCodeAsync(first.forward(hidden), 'INPUT_KIND')
    // a head runtime's session ending early returns hidden states (f16 or f32) and cannot sample
    const h16 = await first.forward(Int32Array.of(1, 403), { hiddenType: 'f16' })
    expect(h16.kind).toBe('hidden')
    expect(h16.dtype).toBe('f16')
    expect([h16.rows, h16.cols]).toEqual([2, nEmbd])
    first.truncate(0)
    const h32 = await first.forward(Int32Array.of(1, 403))
    expect(h32.kind).toBe('hidden')
    expect(h32.dtype).toBe('f32')
    expect([h32.rows, h32.cols]).toEqual([2, nEmbd])
    expectCode(() => first.sample({ temperature: 0 }), 'NO_LOGITS')
    first.close()

    // a middle session takes and returns hidden states
    const mid = full.openSession({ maxTokens: 16, blocks: [1, 4] })
    await expectCodeAsync(mid.forward(Int32Array.of(1)), 'INPUT_KIND')
    const m = await mid.forward(hidden, { hiddenType: 'f16' })
    expect([m.kind, m.dtype, m.rows, m.cols]).toEqual(['hidden', 'f16', 2, nEmbd])
    mid.close()
  })
})
