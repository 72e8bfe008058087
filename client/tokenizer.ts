import { createHash } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getLlama, type Llama, LlamaLogLevel, type LlamaModel, type Token } from 'node-llama-cpp'

let llama: Promise<Llama> | undefined

/** node-llama-cpp with its CPU build and quiet logs: clients only tokenize. */
export function sharedLlama(): Promise<Llama> {
  llama ??= getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, logger: () => {} })
  return llama
}

/**
 * A model's own tokenizer and chat template, loaded vocabulary-only from its metadata-only GGUF
 * (a few hundred KB), so a client never downloads weights.
 */
export class ModelTokenizer {
  private constructor(readonly model: LlamaModel) {}

  static async load(modelId: string, tokenizerGguf: Uint8Array): Promise<ModelTokenizer> {
    const dir = join(tmpdir(), 'neuron-tokenizers')
    await mkdir(dir, { recursive: true })
    const path = join(dir, `${modelId}-${createHash('sha256').update(tokenizerGguf).digest('hex').slice(0, 16)}.gguf`)
    await writeFile(path, tokenizerGguf)
    const model = await (await sharedLlama()).loadModel({ modelPath: path, vocabOnly: true, gpuLayers: 0 })
    return new ModelTokenizer(model)
  }

  /** Token ids of a plain-text prompt, with the BOS token when the model wants one. */
  encode(text: string): number[] {
    const bos = this.model.tokens.bos
    const ids = [...this.model.tokenize(text)]
    return bos !== null && this.model.tokens.shouldPrependBosToken ? [bos, ...ids] : ids
  }

  /** Text of `tokens`; `before`, the tokens preceding them, decides leading spaces as SentencePiece does. */
  decode(tokens: readonly number[], before: readonly number[] = []): string {
    return this.model.detokenize(tokens as readonly Token[], false, before as readonly Token[])
  }

  isEndOfGeneration(token: number): boolean {
    return this.model.isEogToken(token as Token)
  }

  async dispose(): Promise<void> {
    await this.model.dispose()
  }
}
