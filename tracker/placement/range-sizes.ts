import {
  type BlockCache,
  blockCacheBytes,
  type CacheBudget,
  cachePerBlock,
  type ManifestArtifact,
  type Seam,
  tokenCacheBytes,
} from '../../protocol'

/** What sizing needs of a model's manifest; a Manifest fits as is. */
export interface SizedModel {
  readonly nLayer: number
  /** Hidden width: what crosses a cut when the manifest states no seams. */
  readonly nEmbd: number
  readonly bytesPerBlock: readonly number[]
  readonly kvBytesPerTokenPerBlock: number
  readonly cachePerBlock?: readonly BlockCache[] | undefined
  /** Where a range may start and end (protocol/seams.ts); absent, anywhere. */
  readonly seams?: readonly Seam[] | undefined
  /** How hidden states cross the seams (protocol/seams.ts `seamDtype`); absent, f16. */
  readonly seamDtype?: 'f16' | 'f32' | undefined
  /** When given, downloads are counted in whole artifacts and the first and last hops include the embed and head. */
  readonly artifacts?: readonly Pick<ManifestArtifact, 'role' | 'blocks' | 'bytes'>[] | undefined
  /** Tokens the model was trained for: the long-context figure stops there; absent, LONG_CONTEXT. */
  readonly contextLength?: number | undefined
}

/** Memory and download sizes of a range, from prefix sums over the blocks. */
export class RangeSizes {
  private readonly weights: Float64Array
  /** Prefix sums of each block's cache at the budget, and of its bytes per token. */
  private readonly cache: Float64Array
  private readonly perToken: Float64Array
  /** Without a list of artifacts, downloads are counted per block. */
  private readonly wholeArtifacts: boolean
  private readonly embedBytes: number
  private readonly headBytes: number
  private readonly artifacts: readonly Pick<ManifestArtifact, 'role' | 'blocks' | 'bytes'>[]
  private readonly n: number

  constructor(model: SizedModel, budget: CacheBudget) {
    this.n = model.nLayer
    this.weights = prefixSums(model.bytesPerBlock)
    const caches = cachePerBlock(model)
    this.cache = prefixSums(caches.map((c) => blockCacheBytes(c, budget)))
    this.perToken = prefixSums(caches.map(tokenCacheBytes))
    this.artifacts = model.artifacts ?? []
    this.embedBytes = this.artifacts.filter((x) => x.role === 'embed').reduce((sum, x) => sum + x.bytes, 0)
    this.headBytes = this.artifacts.filter((x) => x.role === 'head').reduce((sum, x) => sum + x.bytes, 0)
    this.wholeArtifacts = model.artifacts !== undefined
  }

  /** Embed on the first hop and head on the last: the runtime loads them with the blocks. */
  private ends(a: number, e: number): number {
    return (a === 0 ? this.embedBytes : 0) + (e === this.n ? this.headBytes : 0)
  }

  memoryBytes(a: number, e: number): number {
    return (this.weights[e] as number) - (this.weights[a] as number) + this.ends(a, e) + this.cacheBytes(a, e)
  }

  cacheBytes(a: number, e: number): number {
    return (this.cache[e] as number) - (this.cache[a] as number)
  }

  cacheBytesPerToken(a: number, e: number): number {
    return (this.perToken[e] as number) - (this.perToken[a] as number)
  }

  /** Artifacts are fetched whole, so a range that cuts one still downloads all of it. */
  downloadBytes(a: number, e: number): number {
    if (!this.wholeArtifacts) return (this.weights[e] as number) - (this.weights[a] as number)
    let bytes = this.ends(a, e)
    for (const x of this.artifacts)
      if (x.role === 'blocks' && x.blocks !== null && x.blocks[0] < e && x.blocks[1] > a) bytes += x.bytes
    return bytes
  }
}

function prefixSums(values: readonly number[]): Float64Array {
  const sums = new Float64Array(values.length + 1)
  values.forEach((v, i) => {
    sums[i + 1] = (sums[i] as number) + v
  })
  return sums
}
