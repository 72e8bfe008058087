// ggml's quantizers, for writing quantized GGUFs (gen-model's K-quant mixes).
import { nativeModule } from './binding'
import { toShardRuntimeError } from './errors'

let native: ReturnType<typeof nativeModule>['native'] | undefined

/**
 * Rows of `nPerRow` f32 values as ggml blocks of `type` ("q4_K", "q6_K", "q8_0", ...): the bytes
 * llama-quantize writes for those values. Pass row chunks; one call takes at most 2^28 values.
 */
export function quantizeRows(type: string, values: Float32Array, nPerRow: number): Uint8Array {
  // loaded once: nativeModule registers ggml's backends on every call
  native ??= nativeModule(false).native
  try {
    return native.quantize(type, values, nPerRow)
  } catch (err) {
    throw toShardRuntimeError(err)
  }
}
