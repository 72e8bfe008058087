// The layer-range runtime: blocks [a, b) of a GGUF model on ggml, with a hidden-state seam.
import { ROLLBACK_ARCHS, UNROLLABLE_ARCHS } from '../protocol/families'
import type { NativeInfo, NativeRuntime, NativeSession } from './binding'
import { ShardRuntimeError, toShardRuntimeError, typed } from './errors'
import { BATCHED_ARCHS, type BatchOutcome, type BatchStep, forwardBatch } from './forward-batch'
import { loadNativeRuntime, type ShardRuntimeOptions } from './load-runtime'
import { ShardSession } from './shard-session'

export type ShardRuntimeInfo = NativeInfo & {
  /** ggml devices registered in this process. */
  devices: string[]
  /** Why installed GPU builds could not be loaded (e.g. libcublas.so.13 missing), if any. */
  backendProblems: string[]
}

export type SessionOptions = {
  /** Positions the session's KV cache holds. */
  maxTokens: number
  /** The blocks [from, to) this session runs, within the runtime's range (default: all of it). */
  blocks?: [number, number]
}

export class ShardRuntime {
  private readonly sessions = new Set<ShardSession>()
  private disposed = false

  private constructor(
    private readonly native: NativeRuntime,
    private readonly devices: string[],
    private readonly backendProblems: string[],
  ) {}

  static async load(options: ShardRuntimeOptions): Promise<ShardRuntime> {
    return typed(async () => {
      const { native, devices, problems } = await loadNativeRuntime(options)
      return new ShardRuntime(native, devices, problems)
    })
  }

  info(): ShardRuntimeInfo {
    this.check()
    return { ...this.native.info(), devices: this.devices, backendProblems: this.backendProblems }
  }

  /**
   * A session with its own f16 KV cache, sized for `maxTokens` positions, running `blocks` [from, to)
   * (default: the runtime's whole range; else runtime.from <= from < to <= runtime.to, or BAD_RANGE).
   * It takes token ids only when from = 0 on a runtime with `embed` (else hidden states), and returns
   * logits (and samples) only when to = nLayer on a runtime with `head` (else hidden states).
   * The KV cache holds only the session's blocks.
   */
  openSession(options: SessionOptions): ShardSession {
    this.check()
    if (!Number.isInteger(options.maxTokens) || options.maxTokens < 1) {
      throw new ShardRuntimeError('BAD_OPTIONS', `maxTokens must be a positive integer, got ${options.maxTokens}`, {
        maxTokens: String(options.maxTokens),
      })
    }
    const info = this.native.info()
    const [a, b] = info.blocks
    const blocks = options.blocks
    if (blocks !== undefined) {
      const [from, to] = Array.isArray(blocks) ? blocks : []
      if (
        !Number.isInteger(from) ||
        !Number.isInteger(to) ||
        !(a <= (from as number) && (from as number) < (to as number) && (to as number) <= b)
      ) {
        throw new ShardRuntimeError(
          'BAD_RANGE',
          `session blocks [${String(from)}, ${String(to)}) must be a non-empty sub-range of the runtime's blocks ` +
            `[${a}, ${b})`,
          {
            from: Number.isInteger(from) ? (from as number) : String(from),
            to: Number.isInteger(to) ? (to as number) : String(to),
            runtimeFrom: a,
            runtimeTo: b,
          },
        )
      }
    }
    let s: NativeSession
    try {
      s =
        blocks === undefined
          ? this.native.openSession(options.maxTokens)
          : this.native.openSession(options.maxTokens, blocks[0], blocks[1])
    } catch (err) {
      throw toShardRuntimeError(err)
    }
    // the session's view: its blocks, and whether it embeds / has the head (same rule as the native side)
    const [from, to] = blocks ?? [a, b]
    const view: NativeInfo = {
      ...info,
      blocks: [from, to],
      embed: info.embed && from === 0,
      head: info.head && to === info.nLayer,
    }
    const session = new ShardSession(s, view, options.maxTokens, () => this.sessions.delete(session))
    this.sessions.add(session)
    return session
  }

  /**
   * One step of each session in one graph (continuous batching): weight matmuls and the FFN run once over every
   * session's rows, attention per session over its own cache. Each step settles on its own: a bad step fails alone.
   * Families with sliding windows, recurrent or compressor states or an indexer cannot batch (`canBatch` false):
   * their steps fail with BATCH_UNSUPPORTED; run them with `session.forward`.
   */
  async forwardBatch(steps: BatchStep[]): Promise<BatchOutcome[]> {
    this.check()
    return forwardBatch(this.native, steps)
  }

  /** Whether this runtime's family runs several sessions in one graph (plain per-position K and V caches). */
  get canBatch(): boolean {
    this.batches ??= BATCHED_ARCHS.has(this.info().arch)
    return this.batches
  }
  private batches: boolean | undefined

  /** Whether a session rolls back to any earlier position (protocol/families.ts ROLLBACK_ARCHS). */
  get canRollBack(): boolean {
    return ROLLBACK_ARCHS.has(this.info().arch)
  }

  /** Whether a session rolls back a verify step's rejected drafts (all but UNROLLABLE_ARCHS: no recurrent state). */
  get rollsBackDrafts(): boolean {
    return !UNROLLABLE_ARCHS.has(this.info().arch)
  }

  /** Frees the weights and every session's cache (waits for a forward pass in flight). */
  dispose(): void {
    if (this.disposed) return
    for (const s of [...this.sessions]) s.close()
    this.native.dispose()
    this.disposed = true
  }

  private check(): void {
    if (this.disposed) throw new ShardRuntimeError('RUNTIME_DISPOSED', 'the runtime was disposed')
  }
}
