// Runs in a child process: loads GGUFs in node-llama-cpp (real llama.cpp), one after another, and
// prints each one's greedy continuation of a prompt as a JSON line. A model llama.cpp rejects with
// a GGML_ASSERT aborts this process, not the test runner. End-of-text tokens are yielded, not stops.
// Usage: node --import tsx test/greedy-child.ts STEPS model.gguf...
import { getLlama, LlamaLogLevel, type Token } from 'node-llama-cpp'
import { avoidAmxCpuBackend } from '../native/llama-cpu'

const [steps = '16', ...paths] = process.argv.slice(2)
await avoidAmxCpuBackend()
const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, maxThreads: 1 })
for (const modelPath of paths) {
  const model = await llama.loadModel({ modelPath })
  const context = await model.createContext({ contextSize: 128, threads: 1, sequences: 1 })
  const tokens: number[] = []
  for await (const token of context
    .getSequence()
    .evaluate(model.tokenize('Once upon a time') as Token[], { temperature: 0, yieldEogToken: true })) {
    tokens.push(token)
    if (tokens.length >= Number(steps)) break
  }
  process.stdout.write(
    `${JSON.stringify({ modelPath, architecture: model.fileInfo.metadata.general.architecture, tokens })}\n`,
  )
  await context.dispose()
  await model.dispose()
}
await llama.dispose()
