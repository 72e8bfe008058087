// What bench:batch and bench:mixed-load share: the model they run (models.ts's batchBenchModel), loaded whole both
// ways (our runtime, node-llama-cpp), and the deterministic prompts their sessions start from.
import { getLlama, LlamaLogLevel, type LlamaModel } from 'node-llama-cpp'
import { kvValue, readGguf } from '../gguf/reader'
import type { ShardRuntime } from '../native'
import { batchBenchModel, wholeRuntime } from './models'

/** The model (`given`, else the cached 1.1B, else a small one) as our runtime and as node-llama-cpp load it. */
export async function loadBatchBench(
  given: string,
  threads: number,
): Promise<{ path: string; shape: string; ours: ShardRuntime; vocab: number; model: LlamaModel }> {
  const { path, shape } = await batchBenchModel(given)
  const gguf = await readGguf(path)
  const arch = String(kvValue(gguf, 'general.architecture'))
  const nLayer = Number(kvValue(gguf, `${arch}.block_count`))
  const ours = await wholeRuntime(path, nLayer, threads)
  const llama = await getLlama({ gpu: false, logLevel: LlamaLogLevel.error })
  const model = await llama.loadModel({ modelPath: path })
  return { path, shape, ours, vocab: ours.info().nVocab, model }
}

/** Deterministic prompt tokens for session `k`, past the special and byte tokens. */
export function promptOf(k: number, n: number, vocab: number): number[] {
  let s = (k * 7919 + 1) >>> 0
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return 259 + (s % (vocab - 259))
  })
}
