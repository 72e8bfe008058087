// How often a UDP service answers: a token bucket per source address in a bounded table, and one for all sources,
// so a spoofed flood reflects at most `perSecond` answers a second onto any one victim and `totalPerSecond` in all.

export interface SourceBucketsOptions {
  /** Answers a second to one source address, refilled continuously (default 20). */
  readonly perSecond?: number
  /** Answers one source may have at once after a quiet spell (default: perSecond, a second's worth). */
  readonly burst?: number
  /** Source addresses tracked at once; past it the least recently seen is forgotten (default 10,000). */
  readonly maxSources?: number
  /** Answers a second to all sources together (default 5,000). */
  readonly totalPerSecond?: number
}

interface Bucket {
  tokens: number
  atMs: number
}

export class SourceBuckets {
  readonly perSecond: number
  readonly burst: number
  readonly maxSources: number
  readonly totalPerSecond: number
  /** In order of last use, oldest first (a Map keeps insertion order; a use re-inserts). */
  private readonly sources = new Map<string, Bucket>()
  private readonly total: Bucket

  constructor(options: SourceBucketsOptions = {}, nowMs = performance.now()) {
    this.perSecond = options.perSecond ?? 20
    this.burst = options.burst ?? this.perSecond
    this.maxSources = options.maxSources ?? 10_000
    this.totalPerSecond = options.totalPerSecond ?? 5_000
    for (const [name, value] of Object.entries({
      perSecond: this.perSecond,
      burst: this.burst,
      maxSources: this.maxSources,
      totalPerSecond: this.totalPerSecond,
    }))
      if (!(value > 0 && Number.isFinite(value)))
        throw new RangeError(`SourceBuckets: ${name} must be a finite number above 0, not ${value}`)
    this.total = { tokens: this.totalPerSecond, atMs: nowMs }
  }

  /** Whether `source` may have one more answer now; takes it if so. */
  take(source: string, nowMs = performance.now()): boolean {
    let bucket = this.sources.get(source)
    if (bucket === undefined) {
      // a forgotten source starts full, as it would be after a second of quiet anyway
      bucket = { tokens: this.burst, atMs: nowMs }
      if (this.sources.size >= this.maxSources) {
        const oldest = this.sources.keys().next().value
        if (oldest !== undefined) this.sources.delete(oldest)
      }
    } else this.sources.delete(source)
    this.sources.set(source, bucket)
    refill(bucket, this.perSecond, this.burst, nowMs)
    refill(this.total, this.totalPerSecond, this.totalPerSecond, nowMs)
    if (bucket.tokens < 1 || this.total.tokens < 1) return false
    bucket.tokens -= 1
    this.total.tokens -= 1
    return true
  }

  /** Source addresses tracked now (at most maxSources). */
  get size(): number {
    return this.sources.size
  }
}

function refill(bucket: Bucket, perSecond: number, capacity: number, nowMs: number): void {
  // a clock that steps back adds nothing
  const elapsedMs = Math.max(0, nowMs - bucket.atMs)
  bucket.tokens = Math.min(capacity, bucket.tokens + (elapsedMs / 1000) * perSecond)
  bucket.atMs = Math.max(bucket.atMs, nowMs)
}
