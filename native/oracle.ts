// Test helper: node-llama-cpp (real llama.cpp) running the whole model, the reference our
// shards must match. Greedy decoding, explicit threads, flash attention as our runtime uses.
import { getLlama, type Llama, LlamaLogLevel, type LlamaModel, type Token } from 'node-llama-cpp'
import { avoidAmxCpuBackend } from './llama-cpu'

export type OracleStep = { token: number; probs: Float64Array }

let llama: Llama | undefined

export async function oracleModel(modelPath: string): Promise<LlamaModel> {
  await avoidAmxCpuBackend()
  // gpu: false keeps the oracle on the CPU build, the same ggml libraries our addon links
  llama ??= await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, maxThreads: 2 })
  return llama.loadModel({ modelPath })
}

/** Greedy continuation of `prompt` with the full next-token distribution at each step. */
export async function oracleGreedy(
  model: LlamaModel,
  prompt: number[],
  steps: number,
  nVocab: number,
  opts: { threads?: number; flashAttention?: boolean; contextSize?: number } = {},
): Promise<OracleStep[]> {
  const context = await model.createContext({
    contextSize: opts.contextSize ?? 256,
    threads: opts.threads ?? 1,
    flashAttention: opts.flashAttention ?? true,
    sequences: 1,
  })
  try {
    const sequence = context.getSequence()
    const out: OracleStep[] = []
    for await (const step of sequence.evaluateWithMetadata(
      prompt as Token[],
      { probabilities: true },
      { temperature: 0, yieldEogToken: true },
    )) {
      const probs = new Float64Array(nVocab)
      for (const [token, p] of step.probabilities) probs[token] = p
      out.push({ token: step.token, probs })
      if (out.length >= steps) break
    }
    return out
  } finally {
    await context.dispose()
  }
}

/** llama.cpp's next-token distribution after `tokens`, fed in one batch or one token at a time. */
export async function oracleNextProbs(
  model: LlamaModel,
  tokens: number[],
  nVocab: number,
  opts: { oneByOne: boolean; threads?: number },
): Promise<Float64Array> {
  const context = await model.createContext({
    contextSize: 256,
    threads: opts.threads ?? 1,
    flashAttention: true,
    sequences: 1,
  })
  try {
    const sequence = context.getSequence()
    const head = opts.oneByOne ? tokens.slice(0, -1) : []
    for (const t of head) await sequence.evaluateWithoutGeneratingNewTokens([t as Token])
    const rest = (opts.oneByOne ? tokens.slice(-1) : tokens) as Token[]
    const it = sequence.evaluateWithMetadata(rest, { probabilities: true }, { temperature: 0 })
    const step = (await it.next()).value
    await it.return()
    const probs = new Float64Array(nVocab)
    if (step) for (const [token, p] of step.probabilities) probs[token] = p
    return probs
  } finally {
    await context.dispose()
  }
}
