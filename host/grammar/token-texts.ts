import { kvValue, readGguf } from '../../gguf/reader'
import { tokenizerGgufOf } from '../../gguf/tokenizer'
import { ModelTokenizer } from '../../text/tokenizer'
import type { TokenTexts } from './constraint'

/**
 * Every token's text, from the model's own tokenizer (the metadata of a loaded artifact, vocabulary only): each
 * token decoded after a plain one, so SentencePiece's leading space reads as the swarm client's text has it.
 * Loaded once per host on the first grammar session; a 150k vocabulary takes a fraction of a second.
 */
export async function loadTokenTexts(modelId: string, artifactPath: string): Promise<TokenTexts> {
  const file = await readGguf(artifactPath)
  const tokens = kvValue(file, 'tokenizer.ggml.tokens')
  const nVocab = Array.isArray(tokens) ? tokens.length : 0
  const tokenizer = await ModelTokenizer.load(modelId, tokenizerGgufOf(file))
  try {
    const anchor = tokenizer.encode('a').at(-1) ?? 0
    const anchorText = tokenizer.decode([anchor])
    const texts: string[] = []
    for (let t = 0; t < nVocab; t++) {
      const both = tokenizer.decode([anchor, t])
      texts.push(both.startsWith(anchorText) ? both.slice(anchorText.length) : tokenizer.decode([t], [anchor]))
    }
    return texts
  } finally {
    await tokenizer.dispose()
  }
}

/** loadTokenTexts on first call, the same promise after (a failed load is tried again on the next grammar). */
export function onceTokenTexts(modelId: string, artifactPath: string): () => Promise<TokenTexts> {
  let loading: Promise<TokenTexts> | undefined
  return () => {
    loading ??= loadTokenTexts(modelId, artifactPath).catch((error: unknown) => {
      loading = undefined
      throw error
    })
    return loading
  }
}
