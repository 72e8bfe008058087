import type { LlamaContext, LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp'
import { NeuronError } from '../../protocol'
import { sharedLlama } from '../../text/tokenizer'

/**
 * A small model on the client that proposes tokens for speculative decoding: llama.cpp through node-llama-cpp,
 * one thread, greedy. It keeps its own cache and rolls it back to the tokens the route confirmed.
 */
export class DraftModel {
  private constructor(
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly sequence: LlamaContextSequence,
  ) {}

  /**
   * Loads the draft at `path` for `positions` tokens; refuses one whose vocabulary is not `tokens` (the route model's
   * token texts, in order): a draft's ids must mean the route's tokens.
   */
  static async load(path: string, tokens: readonly string[], positions: number): Promise<DraftModel> {
    const model = await (await sharedLlama()).loadModel({ modelPath: path, gpuLayers: 0 }).catch((e: Error) => {
      throw new NeuronError(
        'draft_unreadable',
        `the draft model ${path} could not be loaded (${e.message}); give a GGUF file llama.cpp reads.`,
      )
    })
    try {
      checkVocabulary(path, model.fileInfo.metadata.tokenizer?.ggml?.tokens ?? [], tokens)
      const context = await model.createContext({
        contextSize: Math.max(64, positions),
        threads: 1,
        sequences: 1,
        flashAttention: true,
      })
      return new DraftModel(model, context, context.getSequence())
    } catch (error) {
      await model.dispose()
      throw error
    }
  }

  /**
   * `k` greedy tokens after `confirmed` (the prompt and every token the route gave). Whatever the draft cached past
   * the longest prefix it shares with `confirmed` is erased first; at least one token is fed to get logits.
   */
  async propose(confirmed: readonly number[], k: number): Promise<number[]> {
    if (k <= 0) return []
    const cached = this.sequence.contextTokens
    let common = 0
    while (common < cached.length && common < confirmed.length && cached[common] === confirmed[common]) common++
    common = Math.min(common, confirmed.length - 1)
    if (common < this.sequence.nextTokenIndex)
      await this.sequence.eraseContextTokenRanges([{ start: common, end: this.sequence.nextTokenIndex }])
    // The route's tokens since the last proposal are fed one at a time, as a greedy decode feeds them: fed as one
    // batch their logits differ in the last bits, which can flip
    // a near tie, and the draft would miss a token it predicts.
    const fresh = confirmed.slice(common) as Token[]
    if (common > 0)
      for (const t of fresh.splice(0, fresh.length - 1)) await this.sequence.evaluateWithoutGeneratingNewTokens([t])
    const out: number[] = []
    for await (const token of this.sequence.evaluate(fresh, { temperature: 0, yieldEogToken: true })) {
      out.push(token)
      if (out.length >= k) break
    }
    return out
  }

  async dispose(): Promise<void> {
    await this.context.dispose()
    await this.model.dispose()
  }
}

/**
 * Same vocabulary size and the same text for every token, else `draft_vocabulary_mismatch` naming the first difference.
 */
export function checkVocabulary(path: string, draft: readonly string[], route: readonly string[]): void {
  const say = (what: string) =>
    new NeuronError(
      'draft_vocabulary_mismatch',
      `the draft model ${path} ${what}; a draft must share the route model's tokenizer. Choose another draft.`,
    )
  if (draft.length !== route.length) throw say(`has ${draft.length} tokens, the route's model ${route.length}`)
  for (let i = 0; i < route.length; i++)
    if (draft[i] !== route[i])
      throw say(`calls token ${i} ${JSON.stringify(draft[i])}, the route's model ${JSON.stringify(route[i])}`)
}
