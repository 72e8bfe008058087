/** What went wrong, as the native runtime reports it. */
export type ShardRuntimeErrorCode =
  | 'UNSUPPORTED_ARCH'
  | 'UNSUPPORTED_MODEL'
  | 'MISSING_TENSOR'
  | 'BAD_METADATA'
  | 'BAD_TENSOR'
  | 'BAD_RANGE'
  | 'BAD_OPTIONS'
  | 'BAD_INPUT'
  | 'ARTIFACT_UNREADABLE'
  | 'ARTIFACT_READ'
  | 'NO_BACKEND'
  | 'UNKNOWN_DEVICE'
  | 'OUT_OF_MEMORY'
  | 'COMPUTE_FAILED'
  | 'INPUT_KIND'
  | 'EMPTY_INPUT'
  | 'TOKEN_OUT_OF_RANGE'
  | 'BAD_INDICES'
  | 'HIDDEN_SIZE'
  | 'TOKEN_IDS_SIZE'
  | 'TOKEN_IDS_UNEXPECTED'
  | 'POSITION_GAP'
  | 'POSITION_PAST_MAX'
  | 'BAD_POSITIONS'
  | 'BAD_TRUNCATE'
  | 'SWA_ROLLBACK'
  | 'RECURRENT_ROLLBACK'
  | 'SESSION_CLOSED'
  | 'SESSION_BUSY'
  | 'RUNTIME_DISPOSED'
  | 'NO_LOGITS'
  | 'BAD_SAMPLER'
  | 'GRAMMAR_STUCK'
  | 'BAD_QUANT_TYPE'
  | 'BAD_QUANT_INPUT'
  | 'NATIVE_NOT_BUILT'
  | 'BATCH_UNSUPPORTED'
  | 'BATCH_MISMATCH'
  | 'BATCH_TOO_LARGE'
  | 'PREFIX_UNSUPPORTED'
  | 'BAD_SOURCE'
  | 'INTERNAL'

export type ShardRuntimeErrorDetails = Record<string, number | string | string[]>

/** A typed runtime error: `code` says what, `details` carries the numbers (sizes, positions, names). */
export class ShardRuntimeError extends Error {
  override readonly name = 'ShardRuntimeError'
  constructor(
    readonly code: ShardRuntimeErrorCode,
    message: string,
    readonly details: ShardRuntimeErrorDetails = {},
  ) {
    super(message)
  }
}

/** Native errors carry `code` and `details`; anything else is an internal error. */
export function toShardRuntimeError(err: unknown): ShardRuntimeError {
  if (err instanceof ShardRuntimeError) return err
  if (err instanceof Error) {
    const { code, details } = err as Error & { code?: unknown; details?: unknown }
    return new ShardRuntimeError(
      typeof code === 'string' ? (code as ShardRuntimeErrorCode) : 'INTERNAL',
      err.message,
      typeof details === 'object' && details !== null ? (details as ShardRuntimeErrorDetails) : {},
    )
  }
  return new ShardRuntimeError('INTERNAL', String(err))
}

/** Runs `f`, rethrowing whatever it throws (or rejects with) as a ShardRuntimeError. */
export async function typed<T>(f: () => Promise<T> | T): Promise<T> {
  try {
    return await f()
  } catch (err) {
    throw toShardRuntimeError(err)
  }
}
