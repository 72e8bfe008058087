// Continuous batching, as llama-server does it: each tick takes the pending step of every session whose step is ready
// and runs them in one graph (ShardRuntime.forwardBatch), then answers each. A session has at most one step here at a
// time (the shard server runs a session's steps in order), so a tick holds each session once. While a batch runs, new
// steps wait for the next tick. Families that cannot batch (sliding windows, recurrent or compressor states, indexers:
// the runtime's `canBatch` is false) run one session per graph, as before.
import type { ForwardOptions, ForwardOutput } from '../../native'
import { ShardRuntimeError } from '../../native'
import type { ServingRuntime, ServingSession } from './serving-runtime'

/** The native limit on sessions per graph (runtime_batch.cpp's MAX_BATCH_SEQS). */
export const MAX_BATCH_SESSIONS = 16
/**
 * Rows one batched graph runs at most (llama.cpp's default ubatch):
 * concurrent prompts must not multiply a graph's compute buffer.
 */
export const MAX_BATCH_ROWS = 512
/** A step of more rows (a prompt) runs in a graph of its own. */
export const MAX_BATCHED_STEP_ROWS = 64

type Input = Int32Array | Float32Array | Uint16Array
type Pending = {
  session: ServingSession
  input: Input
  options: ForwardOptions
  resolve: (out: ForwardOutput) => void
  reject: (err: unknown) => void
}

export class StepBatcher {
  private pending: Pending[] = []
  private running = false
  private scheduled = false
  /** Steps answered and graphs run, for the host's log and the tests. */
  readonly stats = { steps: 0, batches: 0, largest: 0 }

  constructor(private readonly runtime: ServingRuntime) {}

  /** Whether steps join batches; else each runs alone (the family keeps per-session state a shared graph cannot). */
  get batching(): boolean {
    this.canBatch ??= this.runtime.forwardBatch !== undefined && this.runtime.canBatch === true
    return this.canBatch
  }
  private canBatch: boolean | undefined

  /** The step's output, computed in the next tick's batch (or alone when the runtime cannot batch). */
  forward(session: ServingSession, input: Input, options: ForwardOptions): Promise<ForwardOutput> {
    if (!this.batching) return session.forward(input, options)
    return new Promise<ForwardOutput>((resolve, reject) => {
      this.pending.push({ session, input, options, resolve, reject })
      this.schedule()
    })
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
      const outcomes = await forwardBatch.call(
        this.runtime,
        batch.map((p) => ({ session: p.session, input: p.input, options: p.options })),
      )
      for (const [i, p] of batch.entries()) {
        const o = outcomes[i]
        this.stats.steps++
        if (o === undefined)
          p.reject(new ShardRuntimeError('INTERNAL', `the batch of ${batch.length} answered ${outcomes.length} steps`))
        else if (o.ok) p.resolve(o.output)
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

/**
 * Rows of a step: token ids, or hidden states of the session's
 * input width (unknown: as many as its values, so it runs alone).
 */
function rowsOf(p: Pending): number {
  if (p.input instanceof Int32Array) return p.input.length
  return p.input.length / ((p.session as { readonly inputWidth?: number }).inputWidth ?? 1)
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
