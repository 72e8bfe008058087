import { createHash } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getLlama, type Llama, LlamaLogLevel, type LlamaModel, type Token } from 'node-llama-cpp'
import { type Manifest, NeuronError } from '../protocol'

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
  private ends: number[] | undefined
  private constructor(readonly model: LlamaModel) {}

  static async load(modelId: string, tokenizerGguf: Uint8Array): Promise<ModelTokenizer> {
    // A directory of our own (mode 0700, unguessable name): nobody can plant a link or swap the file.
    const dir = await mkdtemp(join(tmpdir(), 'neuron-tokenizer-'))
    try {
      const path = join(dir, `${modelId}.gguf`)
      await writeFile(path, tokenizerGguf, { flag: 'wx', mode: 0o600 })
      const model = await (await sharedLlama()).loadModel({ modelPath: path, vocabOnly: true, gpuLayers: 0 })
      return new ModelTokenizer(model)
    } finally {
      // A vocabulary-only load reads what it needs and maps nothing; where the OS still holds it open, the dir is left.
      await rm(dir, { recursive: true, force: true }).catch(() => {})
    }
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

  /** Every token's text, in id order (a draft model must have the same). */
  get tokenTexts(): readonly string[] {
    return this.model.fileInfo.metadata.tokenizer?.ggml?.tokens ?? []
  }

  isEndOfGeneration(token: number): boolean {
    return this.model.isEogToken(token as Token)
  }

  /**
   * Every end-of-generation token of the vocabulary (a grammar allows them only where its text is whole), at most 64.
   */
  get endTokens(): number[] {
    if (this.ends === undefined) {
      const tokens = this.model.fileInfo.metadata.tokenizer?.ggml?.tokens ?? []
      this.ends = []
      for (let t = 0; t < tokens.length && this.ends.length < 64; t++)
        if (this.model.isEogToken(t as Token)) this.ends.push(t)
    }
    return this.ends
  }

  async dispose(): Promise<void> {
    await this.model.dispose()
  }
}

/** sha256 of a tokenizer GGUF, as a manifest's `tokenizerSha256` records it. */
export function tokenizerSha256(tokenizerGguf: Uint8Array): string {
  return createHash('sha256').update(tokenizerGguf).digest('hex')
}

/**
 * Throws `bad_tokenizer` unless `tokenizerGguf` is the tokenizer `manifest` names (a manifest packed
 * before tokenizers were hashed names none). `sender` says where the bytes came from, `advice` what to do.
 */
export function checkTokenizer(
  manifest: Pick<Manifest, 'modelId' | 'tokenizerSha256'>,
  tokenizerGguf: Uint8Array,
  sender: string,
  advice: string,
): void {
  const expected = manifest.tokenizerSha256
  if (expected === undefined) return
  const got = tokenizerSha256(tokenizerGguf)
  if (got !== expected) {
    throw new NeuronError(
      'bad_tokenizer',
      `the tokenizer ${sender} for ${manifest.modelId} has sha256 ${got.slice(0, 12)}…, its manifest names ` +
        `${expected.slice(0, 12)}…; ${advice}`,
      { modelId: manifest.modelId, expected, got },
    )
  }
}
