// Continuous batching: one step of each of several sessions in one graph of the native runtime.
import { PLAIN_KV_ARCHS } from '../protocol/families'
import type { NativeBatchItem, NativeRuntime } from './binding'
import { ShardRuntimeError, toShardRuntimeError, typed } from './errors'
import type { ForwardOptions, ForwardOutput, ShardSession } from './shard-session'

/** Families whose cache is plain per-position K and V (protocol/families.ts). */
export const BATCHED_ARCHS: ReadonlySet<string> = PLAIN_KV_ARCHS

export type BatchStep = {
  session: ShardSession
  input: Int32Array | Float32Array | Uint16Array
  options?: ForwardOptions
}
export type BatchOutcome = { ok: true; output: ForwardOutput } | { ok: false; error: ShardRuntimeError }

/**
 * ShardRuntime.forwardBatch's steps: each prepared on its own (a bad one fails alone, before anything runs), the
 * runnable ones in one native call, each result settled into its session.
 */
export async function forwardBatch(native: NativeRuntime, steps: BatchStep[]): Promise<BatchOutcome[]> {
  const prepared = steps.map((step) => {
    try {
      return { step, native: step.session.nativeStep(step.input, step.options ?? {}) }
    } catch (err) {
      return { step, error: toShardRuntimeError(err) }
    }
  })
  const runnable = prepared.filter((p) => p.native !== undefined)
  const results =
    runnable.length > 0 ? await typed(() => native.forwardBatch(runnable.map((p) => p.native as NativeBatchItem))) : []
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
