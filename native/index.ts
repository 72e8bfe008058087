export { fromF16, toF16 } from '../protocol/f16'
export type { ShardRuntimeErrorCode, ShardRuntimeErrorDetails } from './errors'
export { ShardRuntimeError } from './errors'
export { quantizeRows } from './quantize'
export type { Sampled, SampleParams } from './sampler'
export type {
  BatchOutcome,
  BatchStep,
  ForwardOptions,
  ForwardOutput,
  SessionOptions,
  ShardRuntimeInfo,
  ShardRuntimeOptions,
} from './shard-runtime'
export { BATCHED_ARCHS, ShardRuntime, ShardSession } from './shard-runtime'
