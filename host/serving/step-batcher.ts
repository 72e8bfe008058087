// Continuous batching, as llama-server does it: each tick takes the pending step of every session whose step is ready
// and runs them in one graph (ShardRuntime.forwardBatch), then answers each. A session has at most one step here at a
// time (the shard server runs a session's steps in order), so a tick holds each session once. While a batch runs, new
// steps wait for the next tick. Families that cannot batch (sliding windows, recurrent or compressor states, indexers:
// the runtime's `canBatch` is false) run one session per graph, as before.
//
// Chunked prefill: a prompt longer than `prefillChunkTokens` runs a chunk per tick, in the tick's batch with the
// other sessions' decode steps, so a decode step waits one chunk at most instead of the whole prompt (llama-server's
// mixed batches). The prompt's answer is its chunks' outputs joined, as one forward of the whole prompt gives them.
import type { ForwardOptions, ForwardOutput } from '../../native'
import { ShardRuntimeError } from '../../native'
import type { ServingRuntime, ServingSession } from './serving-runtime'
import { TickCost } from './tick-cost'

/** The native limit on sessions per graph (runtime_batch.cpp's MAX_BATCH_SEQS). */
export const MAX_BATCH_SESSIONS = 16
/**
 * Rows one batched graph runs at most (llama.cpp's default ubatch):
 * concurrent prompts must not multiply a graph's compute buffer.
 */
export const MAX_BATCH_ROWS = 512
/** A step of more rows (a prompt) runs in a graph of its own. */
export const MAX_BATCHED_STEP_ROWS = 64
/**
 * A prompt's rows per tick (default): one chunk joins the decode batch, whose steps then wait a 72-row graph rather
 * than a 2 000-row one. MAX_BATCHED_STEP_ROWS at most, so a chunk always joins a batch; 0 runs prompts whole.
 */
export const PREFILL_CHUNK_TOKENS = MAX_BATCHED_STEP_ROWS
/**
 * A graph with a prompt's chunk beside decode steps costs at most this times the decode steps alone (the chunk is cut
 * to fit, by the graphs' measured cost per row): the decoders' tokens come at most this much slower while it runs.
 */
const CHUNK_TICK_FACTOR = 1.5
/** The smallest chunk, whatever the costs say (a prompt must still make headway beside a full batch). */
const MIN_CHUNK_ROWS = 2
/** A prompt's first chunk beside decode steps, before its rows' cost is measured. */
const FIRST_CHUNK_ROWS = 8
/** A graph whose steps are all this small is a decode graph: the cost a chunk beside them is measured against. */
const DECODE_STEP_ROWS = 8
/**
 * A session that stepped this recently is decoding: a prompt beside it runs in chunks, though its next step may not
 * have arrived yet (its client's round trip).
 */
const ACTIVE_MS = 1000

export interface StepBatcherOptions {
  /** Rows of a prompt per tick (1..MAX_BATCHED_STEP_ROWS; default PREFILL_CHUNK_TOKENS); 0: prompts run whole. */
  readonly prefillChunkTokens?: number
}

type Input = Int32Array | Float32Array | Uint16Array
type Pending = {
  session: ServingSession
  input: Input
  options: ForwardOptions
  /** A chunk of a prompt (inChunks). */
  chunk: boolean
  /** `steps`: the steps of the graph it ran in, its own included. */
  resolve: (out: ForwardOutput, steps: number) => void
  reject: (err: unknown) => void
}

export class StepBatcher {
  private pending: Pending[] = []
  private running = false
  private scheduled = false
  /** Steps answered and graphs run, for the host's log and the tests. */
  readonly stats = { steps: 0, batches: 0, largest: 0, chunkedPrompts: 0, promptPieces: 0 }
  private readonly chunkRows: number
  private readonly cost = new TickCost()
  /** When each session last queued a step (pruned past ACTIVE_MS). */
  private readonly lastStep = new Map<ServingSession, number>()

  constructor(
    private readonly runtime: ServingRuntime,
    options: StepBatcherOptions = {},
  ) {
    const chunk = options.prefillChunkTokens ?? PREFILL_CHUNK_TOKENS
    if (!Number.isInteger(chunk) || chunk < 0 || chunk > MAX_BATCHED_STEP_ROWS)
      throw new RangeError(
        `prefillChunkTokens must be an integer from 0 (prompts run whole) to ${MAX_BATCHED_STEP_ROWS}; got ${chunk}`,
      )
    this.chunkRows = chunk
  }

  /** Whether steps join batches; else each runs alone (the family keeps per-session state a shared graph cannot). */
  get batching(): boolean {
    this.canBatch ??= this.runtime.forwardBatch !== undefined && this.runtime.canBatch === true
    return this.canBatch
  }
  private canBatch: boolean | undefined

  /** The step's output, computed in the next tick's batch (or alone when the runtime cannot batch). */
  forward(session: ServingSession, input: Input, options: ForwardOptions): Promise<ForwardOutput> {
    if (!this.batching) return session.forward(input, options)
    const width = widthOf(session, input)
    const rows = width === undefined ? 0 : input.length / width
    // a prompt (a verify step's rows are a decode step's, and stay whole)
    if (width !== undefined && this.chunkRows > 0 && rows > MIN_CHUNK_ROWS && options.allLogits !== true) {
      const shared = this.othersDecoding(session)
      if (rows > (shared ? this.chunkSize() : MAX_BATCH_ROWS))
        return this.inChunks(session, input, options, width, rows, shared)
    }
    return this.step(session, input, options)
  }

  private step(session: ServingSession, input: Input, options: ForwardOptions): Promise<ForwardOutput> {
    return this.queued(session, input, options).then((r) => r.output)
  }

  private queued(
    session: ServingSession,
    input: Input,
    options: ForwardOptions,
    chunk = false,
  ): Promise<{ output: ForwardOutput; steps: number }> {
    this.lastStep.delete(session)
    this.lastStep.set(session, performance.now())
    // closed sessions leave it as they go idle (insertion order: the oldest first)
    if (this.lastStep.size > 2 * MAX_BATCH_SESSIONS) this.forgetIdle()
    return new Promise((resolve, reject) => {
      this.pending.push({
        session,
        input,
        options,
        chunk,
        resolve: (output, steps) => resolve({ output, steps }),
        reject,
      })
      this.schedule()
    })
  }

  /**
   * A prompt (more rows than a chunk beside the sessions decoding now) as chunks of `chunkRows` at most, each queued
   * once the one before it is answered (so one per tick, beside the other sessions' steps), their outputs joined. Each
   * chunk is cut so that its graph costs CHUNK_TICK_FACTOR times the other steps' alone at most, by the graphs'
   * measured cost per row (TickCost). While no other session has stepped within ACTIVE_MS, the prompt runs in pieces
   * of MAX_BATCH_ROWS (llama.cpp's ubatch), at prefill's full speed; a step that arrives meanwhile waits that piece,
   * and the chunks after it are small. A chunk that fails fails the prompt: the session then holds the chunks before
   * it, as a forward that failed part-way through a prompt's ubatches leaves llama.cpp's cache.
   */
  private async inChunks(
    session: ServingSession,
    input: Input,
    options: ForwardOptions,
    width: number,
    rows: number,
    /** Whether other sessions decode beside the next chunk: as found now, then as its last graph had them. */
    shared: boolean,
  ): Promise<ForwardOutput> {
    this.stats.chunkedPrompts++
    const outputs: ForwardOutput[] = []
    for (let from = 0; from < rows; ) {
      const to = Math.min(rows, from + (shared ? this.chunkSize() : MAX_BATCH_ROWS))
      const piece = input.subarray(from * width, to * width) as Input
      this.stats.promptPieces++
      const { output, steps } = await this.queued(session, piece, chunkOptions(options, from, to, rows), true)
      outputs.push(output)
      shared = steps > 1 || this.othersDecoding(session)
      from = to
    }
    return joined(outputs, options.allLogits === true)
  }

  /**
   * `session` closed: it decodes no more. Until it is forgotten, a prompt that came within ACTIVE_MS of its last step
   * ran in chunks beside nobody (a gateway's next request, another client's chat just after one ended).
   */
  forget(session: ServingSession): void {
    this.lastStep.delete(session)
  }

  /** Whether a session other than `session` stepped within ACTIVE_MS, or has a step waiting. */
  private othersDecoding(session: ServingSession): boolean {
    this.forgetIdle()
    for (const s of this.lastStep.keys()) if (s !== session) return true
    return this.pending.some((p) => p.session !== session)
  }

  private forgetIdle(): void {
    const since = performance.now() - ACTIVE_MS
    for (const [s, at] of this.lastStep) if (at < since) this.lastStep.delete(s)
  }

  /** A chunk's rows beside decode steps: as the measured costs allow, within the configured bound. */
  private chunkSize(): number {
    const fit = this.cost.rowsWithin(CHUNK_TICK_FACTOR) ?? FIRST_CHUNK_ROWS
    return Math.min(this.chunkRows, Math.max(MIN_CHUNK_ROWS, fit))
  }

  /** A decode graph's cost, or what a prompt's rows added beside decode steps (the batcher's TickCost). */
  private measure(batch: Pending[], ms: number): void {
    let promptRows = 0
    let decoding = 0
    for (const p of batch) {
      const n = rowsOf(p)
      if (p.chunk) promptRows += n
      else if (n <= DECODE_STEP_ROWS) decoding++
      else return
    }
    if (decoding === 0) return
    if (promptRows === 0) this.cost.decodeOnly(ms)
    else this.cost.mixed(promptRows, ms)
  }

  private schedule(): void {
    if (this.running || this.scheduled || this.pending.length === 0) return
    this.scheduled = true
    // setImmediate: the steps that arrived in this turn of the event loop join the same batch
    setImmediate(() => {
      this.scheduled = false
      void this.tick()
    })
  }

  private async tick(): Promise<void> {
    const ready = this.pending
    this.pending = []
    this.running = true
    try {
      // one graph per group of sessions with the same blocks and input kind (the native batch needs both equal)
      for (const group of groups(ready)) for (const batch of budgeted(group)) await this.run(batch)
    } finally {
      this.running = false
      this.schedule()
    }
  }

  private async run(batch: Pending[]): Promise<void> {
    const forwardBatch = this.runtime.forwardBatch
    if (forwardBatch === undefined) throw new ShardRuntimeError('INTERNAL', 'the runtime lost forwardBatch')
    this.stats.batches++
    this.stats.largest = Math.max(this.stats.largest, batch.length)
    try {
      const started = performance.now()
      const outcomes = await forwardBatch.call(
        this.runtime,
        batch.map((p) => ({ session: p.session, input: p.input, options: p.options })),
      )
      this.measure(batch, performance.now() - started)
      for (const [i, p] of batch.entries()) {
        const o = outcomes[i]
        this.stats.steps++
        if (o === undefined)
          p.reject(new ShardRuntimeError('INTERNAL', `the batch of ${batch.length} answered ${outcomes.length} steps`))
        else if (o.ok) p.resolve(o.output, batch.length)
        else p.reject(o.error)
      }
    } catch (err) {
      // the whole graph failed (out of memory, a compute failure, the runtime disposed): each step runs again alone,
      // so one session's step cannot fail the others'
      if (batch.length > 1) for (const p of batch) await this.run([p])
      else for (const p of batch) p.reject(err)
    }
  }
}

function groups(steps: Pending[]): Pending[][] {
  const byKey = new Map<string, Pending[]>()
  for (const p of steps) {
    const key = `${p.session.blocks[0]}-${p.session.blocks[1]}-${p.input instanceof Int32Array ? 'tokens' : 'hidden'}`
    const g = byKey.get(key)
    if (g === undefined) byKey.set(key, [p])
    else g.push(p)
  }
  return [...byKey.values()]
}

/** Values per row of a step's input: 1 for token ids, the session's input width for hidden states (else undefined). */
function widthOf(session: ServingSession, input: Input): number | undefined {
  if (input instanceof Int32Array) return 1
  const width = (session as { readonly inputWidth?: number }).inputWidth
  return width !== undefined && width > 0 && input.length % width === 0 ? width : undefined
}

/**
 * Rows of a step: token ids, or hidden states of the session's
 * input width (unknown: as many as its values, so it runs alone).
 */
function rowsOf(p: Pending): number {
  return p.input.length / (widthOf(p.session, p.input) ?? 1)
}

/** A chunk's options: rows [from, to) of the prompt's positions, token ids and indices; logits as the prompt asked. */
function chunkOptions(options: ForwardOptions, from: number, to: number, rows: number): ForwardOptions {
  const { positions, tokenIds, indices } = options
  const perRow = indices === undefined ? 0 : indices.length / rows
  return {
    ...options,
    ...(positions === undefined
      ? {}
      : { positions: typeof positions === 'number' ? positions + from : positions.subarray(from, to) }),
    ...(tokenIds === undefined ? {} : { tokenIds: tokenIds.subarray(from, to) }),
    ...(indices === undefined ? {} : { indices: indices.subarray(from * perRow, to * perRow) }),
  }
}

/**
 * The chunks' outputs as the whole prompt's: hidden rows (and their indices) end to end; logits of every row when
 * asked, else the last row's (the last chunk's).
 */
function joined(outputs: ForwardOutput[], allLogits: boolean): ForwardOutput {
  const last = outputs.at(-1) as ForwardOutput
  if (last.kind === 'logits' && !allLogits) return last
  const rows = outputs.reduce((n, o) => n + o.rows, 0)
  const data = concat(outputs.map((o) => o.data))
  if (last.kind === 'logits') return { ...last, rows, data: data as Float32Array }
  const indices = outputs.map((o) => (o.kind === 'hidden' ? o.indices : undefined))
  const joinedIndices = indices.every((i) => i !== undefined) ? concat(indices as Int32Array[]) : undefined
  return {
    ...last,
    rows,
    data,
    ...(joinedIndices === undefined ? {} : { indices: joinedIndices as Int32Array }),
  } as ForwardOutput
}

/** Typed arrays of one kind, end to end, in a new array of that kind. */
function concat<T extends Float32Array | Uint16Array | Int32Array>(parts: readonly T[]): T {
  const first = parts[0] as T
  const out = new (first.constructor as { new (n: number): T })(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p as never, at)
    at += p.length
  }
  return out
}

/** A group's steps in batches of at most MAX_BATCH_SESSIONS sessions and MAX_BATCH_ROWS rows; long steps alone. */
function budgeted(group: Pending[]): Pending[][] {
  const batches: Pending[][] = []
  let batch: Pending[] = []
  let rows = 0
  for (const p of group) {
    const n = rowsOf(p)
    if (n > MAX_BATCHED_STEP_ROWS) {
      batches.push([p])
      continue
    }
    if (batch.length === MAX_BATCH_SESSIONS || rows + n > MAX_BATCH_ROWS) {
      batches.push(batch)
      batch = []
      rows = 0
    }
    batch.push(p)
    rows += n
  }
  if (batch.length > 0) batches.push(batch)
  return batches
}
