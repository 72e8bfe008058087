import { readGguf } from './reader'
import { serializeHeader } from './writer'

/**
 * A GGUF with a model's metadata (tokenizer, chat template, hyper-parameters) and no tensors:
 * what a client needs to tokenize and render chats, a few hundred KB even for large vocabularies.
 * node-llama-cpp loads it with `vocabOnly: true`.
 */
export async function tokenizerGguf(modelOrArtifact: string): Promise<Buffer> {
  const file = await readGguf(modelOrArtifact)
  const kvs = file.kvs.filter((kv) => !kv.key.startsWith('neuron.'))
  return serializeHeader(kvs, [], file.alignment).bytes
}
