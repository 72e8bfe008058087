// Test helpers: the stories260K model, a packed artifact set, and a route of shards driven
// the way the client drives hops (prefill all prompt tokens at once, then one token per step).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { packModel } from '../gguf/pack'
import { artifactsFor } from '../native/artifacts'
import { softmax } from '../native/sampler'
import { ShardRuntime } from '../native/shard-runtime'
import type { ForwardOutput, ShardSession } from '../native/shard-session'
import { Manifest } from '../protocol'
import { STORIES_260K } from './models'

/** The model the repository ships (test/models.ts). */
export const STORIES = STORIES_260K
// one thread: tiny models are dominated by thread hand-offs, and
// a 2-core machine shared with other work stalls spinning threads
export const THREADS = 1

/** Greedy tokens from a whole-model session: the prompt in one step, then `n` tokens one at a time. */
export async function greedy(s: ShardSession, prompt: Int32Array, n: number): Promise<number[]> {
  const out: number[] = []
  await s.forward(prompt)
  for (let i = 0; i < n; i++) {
    const { token } = s.sample({ temperature: 0 })
    out.push(token)
    await s.forward(Int32Array.of(token))
  }
  return out
}

let packed: { manifest: Manifest; dir: string; root: string } | undefined

/** stories260K packed with 2 blocks per artifact: embed, blk 0-2, 2-4, 4-5, head. */
export async function packedStories(): Promise<{ manifest: Manifest; dir: string }> {
  if (!packed) {
    const root = mkdtempSync(join(tmpdir(), 'neuron-native-'))
    const dir = join(root, 'stories260K')
    await packModel({ source: STORIES, out: dir, blocksPerArtifact: 2 })
    const manifest = Manifest.parse(JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')))
    packed = { manifest, dir, root }
  }
  return packed
}

export function removePackedStories(): void {
  if (packed) rmSync(packed.root, { recursive: true, force: true })
  packed = undefined
}

export type Split = [number, number][]

/** Every way to cut [0, n) into consecutive non-empty ranges. */
export function allSplits(n: number): Split[] {
  const out: Split[] = []
  for (let mask = 0; mask < 1 << (n - 1); mask++) {
    const split: Split = []
    let start = 0
    for (let i = 1; i < n; i++) {
      if (mask & (1 << (i - 1))) {
        split.push([start, i])
        start = i
      }
    }
    split.push([start, n])
    out.push(split)
  }
  return out
}

/** Runtimes keyed by range, shared across routes (loading is the slow part). */
export class RuntimePool {
  private readonly runtimes = new Map<string, Promise<ShardRuntime>>()
  constructor(
    private readonly artifacts: (blocks: [number, number], embed: boolean, head: boolean) => string[],
    private readonly nLayer: number,
  ) {}

  /** By default the range embeds when it starts at 0 and has the head when it ends at the last block. */
  get(blocks: [number, number], embed = blocks[0] === 0, head = blocks[1] === this.nLayer): Promise<ShardRuntime> {
    const key = `${blocks[0]}-${blocks[1]}-${embed}-${head}`
    let rt = this.runtimes.get(key)
    if (!rt) {
      rt = ShardRuntime.load({
        artifacts: this.artifacts(blocks, embed, head),
        blocks,
        embed,
        head,
        threads: THREADS,
        device: 'cpu',
      })
      this.runtimes.set(key, rt)
    }
    return rt
  }

  async dispose(): Promise<void> {
    for (const rt of this.runtimes.values()) (await rt).dispose()
    this.runtimes.clear()
  }
}

export function packedPool(manifest: Manifest, dir: string): RuntimePool {
  return new RuntimePool((blocks) => artifactsFor(manifest, dir, blocks), manifest.nLayer)
}

export type RouteStep = { token: number; probs: Float64Array }

/** Greedy generation through a chain of shards; hidden states cross each seam as f32 or f16. */
export async function generateThroughRoute(
  pool: RuntimePool,
  split: Split,
  prompt: number[],
  steps: number,
  seam: 'f32' | 'f16' = 'f32',
  maxTokens = 256,
): Promise<RouteStep[]> {
  const sessions: ShardSession[] = []
  // the first shard embeds, the last has the head (a shard may hold no blocks at all)
  for (const [i, range] of split.entries()) {
    const rt = await pool.get(range, i === 0, i === split.length - 1)
    sessions.push(rt.openSession({ maxTokens }))
  }
  try {
    const out: RouteStep[] = []
    let input: Int32Array = Int32Array.from(prompt)
    for (let step = 0; step < steps; step++) {
      let x: Int32Array | Float32Array | Uint16Array = input
      let indices: Int32Array | undefined
      let logits: Float32Array | undefined
      for (const s of sessions) {
        // what the seam carries besides the hidden state: the step's token ids, the previous hop's indices
        const side = { ...(s.needsTokenIds ? { tokenIds: input } : {}), ...(s.indicesIn > 0 ? { indices } : {}) }
        const res = await s.forward(x, { hiddenType: seam, ...side })
        if (res.kind === 'logits') logits = res.data
        else [x, indices] = [res.data, res.indices]
      }
      const last = sessions[sessions.length - 1] as ShardSession
      const { token } = last.sample({ temperature: 0 })
      out.push({ token, probs: softmax(logits as Float32Array) })
      input = Int32Array.of(token)
    }
    return out
  } finally {
    for (const s of sessions) s.close()
  }
}

/** The logits of a last-hop forward (fails the test on hidden states). */
export function logitsOf(out: ForwardOutput): Float32Array {
  if (out.kind !== 'logits') throw new Error(`expected logits, got ${out.kind} (${out.dtype})`)
  return out.data
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)))
  return m
}
