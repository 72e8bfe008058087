import { type GgufFile, readGguf } from './reader'
import { serializeHeader } from './writer'

/**
 * A GGUF with a model's metadata (tokenizer, chat template, hyper-parameters) and no tensors:
 * what a client needs to tokenize and render chats, a few hundred KB even for large vocabularies.
 * node-llama-cpp loads it with `vocabOnly: true`.
 */
export async function tokenizerGguf(modelOrArtifact: string): Promise<Buffer> {
  return tokenizerGgufOf(await readGguf(modelOrArtifact))
}

/** The tokenizer GGUF of a parsed model or artifact: the same bytes from the source and from any of its artifacts. */
export function tokenizerGgufOf(file: GgufFile): Buffer {
  const kvs = file.kvs.filter((kv) => !kv.key.startsWith('neuron.'))
  return serializeHeader(kvs, [], file.alignment).bytes
}
