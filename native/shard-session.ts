// One session of a ShardRuntime: its own KV cache over its blocks, its steps, and sampling at the last hop.
import type { NativeBatchItem, NativeForwardResult, NativeInfo, NativeSeam, NativeSession } from './binding'
import { ShardRuntimeError, toShardRuntimeError, typed } from './errors'
import { type Sampled, type SampleParams, SeededRandom, sampleToken } from './sampler'

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

  /**
   * Takes `source`'s first `n` cached positions as this session's own (their K and V copied), as if it had run them: a
   * host's prefix cache. Both run the same blocks of one runtime, whose family keeps plain per-position K and V (it
   * batches: ShardRuntime.canBatch); else PREFIX_UNSUPPORTED / BAD_SOURCE. This session's cache starts over from them.
   */
  copyPrefix(source: ShardSession, n: number): void {
    if (this.closed || source.closed) throw new ShardRuntimeError('SESSION_CLOSED', 'the session is closed')
    try {
      this.native.copyPrefix(source.native, n)
    } catch (err) {
      throw toShardRuntimeError(err)
    }
    // a session that takes token ids holds them by position; one that takes hidden states only its samples, which are
    // the source's own and not this session's (a repeat penalty would count them)
    this.history = this.info.embed ? source.history.slice(0, n) : []
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
