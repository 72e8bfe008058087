// The layer-range runtime: blocks [a, b) of a GGUF model on ggml, with a hidden-state seam.
import { availableParallelism } from 'node:os'
import {
  type NativeBatchItem,
  type NativeForwardResult,
  type NativeInfo,
  type NativeRuntime,
  type NativeSeam,
  type NativeSession,
  nativeModule,
} from './binding'
import { ShardRuntimeError, toShardRuntimeError, typed } from './errors'
import { type Sampled, type SampleParams, SeededRandom, sampleToken } from './sampler'

export type ShardRuntimeOptions = {
  /** GGUF files, each with the model's full metadata and some of its tensors (an artifact set or one whole model). */
  artifacts: string[]
  /** Blocks [from, to) this runtime serves. */
  blocks: [number, number]
  /** First hop: takes token ids and owns token_embd.weight. */
  embed: boolean
  /** Last hop: output norm + lm_head; returns logits and samples. */
  head: boolean
  /** CPU threads; never more than the machine's cores (ggml slows down badly when oversubscribed). */
  threads: number
  /** 'auto' (a GPU when one is registered, else the CPU), 'cpu', or a ggml device name such as 'CUDA0'. */
  device?: string
  /** Flash attention, as llama.cpp picks by default on CPU (default true). */
  flashAttention?: boolean
  /**
   * Map the artifact files and use weights that need no repacking in place, sharing the page cache's copy a
   * seeding host already holds (default true; NEURON_NO_MMAP=1 turns it off, for a baseline).
   */
  mmap?: boolean
  /**
   * Map those weights with 2 MB pages where the kernel can (Linux with transparent huge pages not at `never`): a
   * step reads every weight, and 4 KB pages cost it 10-20 % in TLB misses (default true; NEURON_NO_HUGE_PAGES=1
   * turns it off, for a baseline).
   */
  hugePages?: boolean
}

export type ShardRuntimeInfo = NativeInfo & {
  /** ggml devices registered in this process. */
  devices: string[]
  /** Why installed GPU builds could not be loaded (e.g. libcublas.so.13 missing), if any. */
  backendProblems: string[]
}

export type ForwardOptions = {
  /**
   * Position of the first input token (a number), or every token's position (contiguous). Default: the session's nPast.
   */
  positions?: number | Int32Array
  /** With `head`: logits for every position instead of the last one only. */
  allLogits?: boolean
  /** Hidden states as f16 bits, ready for the wire (converted off the JS thread). Logits stay f32. */
  hiddenType?: 'f32' | 'f16'
  /** The token ids of the hidden rows: required exactly when the session `needsTokenIds`. */
  tokenIds?: Int32Array
  /**
   * nTokens x `indicesIn` int32, token-major, from the previous hop's output: required exactly when `indicesIn` > 0.
   */
  indices?: Int32Array
}

/**
 * Hidden states [rows = nTokens x cols = outputWidth] for the next hop (with `indices`, nTokens x `indicesOut`, when
 * the session returns them), or logits [rows x nVocab] at the last hop.
 */
export type ForwardOutput =
  | { kind: 'logits'; dtype: 'f32'; data: Float32Array; rows: number; cols: number }
  | { kind: 'hidden'; dtype: 'f32'; data: Float32Array; rows: number; cols: number; indices?: Int32Array }
  | { kind: 'hidden'; dtype: 'f16'; data: Uint16Array; rows: number; cols: number; indices?: Int32Array }

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
      const [from, to] = options.blocks
      if (!Number.isInteger(options.threads) || options.threads < 1) {
        throw new ShardRuntimeError('BAD_OPTIONS', `threads must be a positive integer, got ${options.threads}`, {
          threads: String(options.threads),
        })
      }
      // ggml's threads spin at barriers: more threads than cores is 20-1000x slower, never faster
      const cores = availableParallelism()
      if (options.threads > cores) {
        throw new ShardRuntimeError('BAD_OPTIONS', `threads ${options.threads} exceeds this machine's ${cores} cores`, {
          threads: options.threads,
          cores,
        })
      }
      const device = options.device ?? 'auto'
      const { native, devices, problems } = nativeModule(device.toLowerCase() !== 'cpu')
      const rt = await native.loadRuntime({
        artifacts: options.artifacts,
        from,
        to,
        embed: options.embed,
        head: options.head,
        threads: options.threads,
        device,
        flashAttention: options.flashAttention ?? true,
        mmap: options.mmap ?? process.env.NEURON_NO_MMAP !== '1',
        hugePages: options.hugePages ?? process.env.NEURON_NO_HUGE_PAGES !== '1',
      })
      return new ShardRuntime(rt, devices, problems)
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
    const prepared = steps.map((step) => {
      try {
        return { step, native: step.session.nativeStep(step.input, step.options ?? {}) }
      } catch (err) {
        return { step, error: toShardRuntimeError(err) }
      }
    })
    const runnable = prepared.filter((p) => p.native !== undefined)
    const results =
      runnable.length > 0
        ? await typed(() => this.native.forwardBatch(runnable.map((p) => p.native as NativeBatchItem)))
        : []
    let next = 0
    return prepared.map((p): BatchOutcome => {
      if (p.native === undefined)
        return { ok: false, error: p.error ?? new ShardRuntimeError('INTERNAL', 'batch step not prepared') }
      const r = results[next++]
      if (r === undefined)
        return { ok: false, error: new ShardRuntimeError('INTERNAL', 'the batch returned fewer results than steps') }
      if (!r.ok) return { ok: false, error: toShardRuntimeError(r.error) }
      // closed while its step ran: the others' results stand, this
      // one is dropped (its cache was freed as the batch settled)
      if (p.step.session.isClosed)
        return {
          ok: false,
          error: new ShardRuntimeError('SESSION_CLOSED', 'the session was closed while its step ran'),
        }
      return { ok: true, output: p.step.session.settleStep(p.step.input, p.native.start, r) }
    })
  }

  /** Whether this runtime's family runs several sessions in one graph (plain per-position K and V caches). */
  get canBatch(): boolean {
    return BATCHED_ARCHS.has(this.info().arch)
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

/**
 * Families whose cache is plain per-position K and V (runtime_batch.cpp's batch_refusal says why the others are not).
 */
export const BATCHED_ARCHS: ReadonlySet<string> = new Set(['llama', 'qwen2', 'qwen3', 'qwen3moe', 'deepseek2'])

export type BatchStep = {
  session: ShardSession
  input: Int32Array | Float32Array | Uint16Array
  options?: ForwardOptions
}
export type BatchOutcome = { ok: true; output: ForwardOutput } | { ok: false; error: ShardRuntimeError }

export class ShardSession {
  private lastLogits: Float32Array | undefined
  private history: number[] = []
  private rng: SeededRandom | undefined
  private closed = false
  private readonly seam: NativeSeam

  constructor(
    private readonly native: NativeSession,
    private readonly info: NativeInfo,
    readonly maxTokens: number,
    private readonly onClose: () => void,
  ) {
    this.seam = native.seam
  }

  /** The blocks [from, to) this session runs. */
  get blocks(): [number, number] {
    return [this.info.blocks[0], this.info.blocks[1]]
  }

  /** Whether forward() takes token ids (first hop: from = 0 with the embedding); else hidden states. */
  get takesTokens(): boolean {
    return this.info.embed
  }

  /** Whether forward() returns logits and sample() works (last hop: to = nLayer with the head); else hidden states. */
  get returnsLogits(): boolean {
    return this.info.head
  }

  /** Values per token of a hidden-state input (n_embd for most families). */
  get inputWidth(): number {
    return this.seam.inputWidth
  }

  /** Values per token of a hidden-state output. */
  get outputWidth(): number {
    return this.seam.outputWidth
  }

  /** Whether forward() needs `tokenIds` with its hidden states (a block of the range needs them; it does not embed). */
  get needsTokenIds(): boolean {
    return this.seam.needsTokenIds
  }

  /**
   * Int32 per token that forward() needs in `indices` (glm-dsa:
   * the range starts at a shared-indexer block); 0 when none.
   */
  get indicesIn(): number {
    return this.seam.indicesIn
  }

  /**
   * Int32 per token a hidden output carries in `indices` (glm-dsa:
   * the next block is a shared-indexer block); 0 when none.
   */
  get indicesOut(): number {
    return this.seam.indicesOut
  }

  /** Whether close() was called (a batch drops the step of a session closed while it ran). */
  get isClosed(): boolean {
    return this.closed
  }

  /** Positions cached so far; the next forward starts here unless told otherwise. */
  get nPast(): number {
    return this.closed ? 0 : this.native.nPast
  }

  get kvBytes(): number {
    return this.closed ? 0 : this.native.kvBytes
  }

  /** Cache bytes of each block the session runs: a sliding-window block's stay capped at its ring of cells. */
  get kvBytesPerBlock(): number[] {
    return this.closed ? [] : this.native.kvBytesPerBlock
  }

  /**
   * Runs this session's blocks over n tokens: token ids (Int32Array) at the first hop, else hidden
   * states [n x inputWidth] as Float32Array or f16 bits (Uint16Array, as they travel on the wire).
   * Starting before nPast rolls the cache back to that position first.
   */
  async forward(input: Int32Array | Float32Array | Uint16Array, options: ForwardOptions = {}): Promise<ForwardOutput> {
    return typed(async () => {
      const n = this.nativeStep(input, options)
      return this.settleStep(
        input,
        n.start,
        await this.native.forward(input, n.start, n.allOutputs, n.f16Output, n.side),
      )
    })
  }

  /** @internal the native arguments of a step (throws before anything runs) */
  nativeStep(input: Int32Array | Float32Array | Uint16Array, options: ForwardOptions): NativeBatchItem {
    if (this.closed) throw new ShardRuntimeError('SESSION_CLOSED', 'the session is closed')
    const start = startOf(options.positions, this.native.nPast, input, this.seam.inputWidth)
    const f16Output = options.hiddenType === 'f16' && !this.info.head
    const side = { tokenIds: options.tokenIds, indices: options.indices }
    return { session: this.native, input, start, allOutputs: options.allLogits ?? false, f16Output, side }
  }

  /** @internal a step's result: the token history and the logits sample() reads */
  settleStep(input: Int32Array | Float32Array | Uint16Array, start: number, res: NativeForwardResult): ForwardOutput {
    if (input instanceof Int32Array) {
      this.history.length = Math.min(this.history.length, start)
      this.history.push(...input)
    }
    const { data, rows, cols, indices } = res
    if (data instanceof Uint16Array)
      return { kind: 'hidden', dtype: 'f16', data, rows, cols, ...(indices ? { indices } : {}) }
    if (this.info.head) {
      this.lastLogits = data.subarray((rows - 1) * cols)
      return { kind: 'logits', dtype: 'f32', data, rows, cols }
    }
    return { kind: 'hidden', dtype: 'f32', data, rows, cols, ...(indices ? { indices } : {}) }
  }

  /** Samples the next token from the last forward's logits (last hop only). */
  sample(params: SampleParams = {}, history?: readonly number[]): Sampled {
    if (this.closed) throw new ShardRuntimeError('SESSION_CLOSED', 'the session is closed')
    if (!this.lastLogits) {
      throw new ShardRuntimeError(
        'NO_LOGITS',
        this.info.head
          ? 'sample() needs a forward() first'
          : 'this session does not end at the last block with the head; only the last hop samples',
      )
    }
    if (params.seed !== undefined && this.rng?.seed !== params.seed) this.rng = new SeededRandom(params.seed)
    this.rng ??= new SeededRandom(Date.now() >>> 0)
    const rng = this.rng
    const out = sampleToken(this.lastLogits, params, history ?? this.history, () => rng.next())
    if (!history) this.history.push(out.token)
    return out
  }

  /** Rolls the cache back to the first `nPast` positions. */
  truncate(nPast: number): void {
    if (this.closed) throw new ShardRuntimeError('SESSION_CLOSED', 'the session is closed')
    try {
      this.native.truncate(nPast)
    } catch (err) {
      throw toShardRuntimeError(err)
    }
    this.history.length = Math.min(this.history.length, nPast)
    this.lastLogits = undefined
  }

  /** Frees the cache; later calls throw SESSION_CLOSED. */
  close(): void {
    if (this.closed) return
    this.native.close()
    this.closed = true
    this.lastLogits = undefined
    this.onClose()
  }
}

function startOf(
  positions: ForwardOptions['positions'],
  nPast: number,
  input: Int32Array | Float32Array | Uint16Array,
  width: number,
): number {
  if (positions === undefined) return nPast
  if (typeof positions === 'number') return positions
  const n = input instanceof Int32Array ? input.length : Math.floor(input.length / width)
  if (positions.length !== n) {
    throw new ShardRuntimeError('BAD_POSITIONS', `${positions.length} positions for ${n} tokens`, {
      positions: positions.length,
      tokens: n,
    })
  }
  const first = positions[0] ?? nPast
  for (let i = 1; i < positions.length; i++) {
    if (positions[i] !== first + i) {
      throw new ShardRuntimeError(
        'BAD_POSITIONS',
        `positions must be contiguous; got ${positions[i]} at index ${i} after ${first}`,
        {
          index: i,
          position: positions[i] as number,
          first,
        },
      )
    }
  }
  return first
}
