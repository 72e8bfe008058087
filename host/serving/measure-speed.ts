// The speed a host states when it joins: compute time per block for one decoded token, measured on a scratch
// session whose inputs are what the manifest's seam at its first block carries.
import { type Manifest, seamAt } from '../../protocol'
import { checkSeamsAgree } from './seam-io'
import type { ServingRuntime } from './serving-runtime'

/** The median of a few single-token steps, per block; first checks that the runtime's seams are the manifest's. */
export async function measureSpeed(
  runtime: ServingRuntime,
  manifest: Manifest,
  blocks: readonly [number, number],
  embed: boolean,
): Promise<number> {
  const session = runtime.openSession({ maxTokens: 8 })
  const times: number[] = []
  try {
    checkSeamsAgree(session, manifest, blocks)
    const seam = seamAt(manifest, blocks[0])
    for (let i = 0; i < 5; i++) {
      const input = embed ? Int32Array.of(1) : new Float32Array(seam.values).fill(0.01)
      // what the seam carries besides: a token id, and indices of cached positions (0..i, then -1s)
      const k = seam.int32PerToken
      const side = embed
        ? {}
        : {
            ...(seam.tokenIds ? { tokenIds: Int32Array.of(1) } : {}),
            ...(k > 0 ? { indices: new Int32Array(k).map((_, j) => (j <= i ? j : -1)) } : {}),
          }
      const started = performance.now()
      await session.forward(input, { positions: i, ...side })
      times.push(performance.now() - started)
    }
  } finally {
    session.close()
  }
  times.sort((a, b) => a - b)
  return Math.max(1e-3, (times[2] ?? 1) / (blocks[1] - blocks[0]))
}
