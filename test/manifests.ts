import { MANIFEST_FORMAT } from '../protocol'

const sha = (c: string) => c.repeat(64)
/** A manifest as `neuron pack` wrote it before blocks stated their own cache: one KV figure for all. */
export const OLD_MANIFEST = {
  format: MANIFEST_FORMAT,
  modelId: 'toy',
  name: 'toy',
  architecture: 'llama',
  nLayer: 3,
  nEmbd: 64,
  nVocab: 512,
  contextLength: 2048,
  bytesPerBlock: [1000, 1000, 1000],
  kvBytesPerTokenPerBlock: 128,
  tiedEmbeddings: true,
  alignment: 32,
  pieceBytes: 16384,
  source: { file: 'toy.gguf', bytes: 5000, sha256: sha('a') },
  artifacts: [
    { file: 'embed.gguf', role: 'embed', blocks: null, bytes: 16384, sha256: sha('b'), tensors: ['token_embd.weight'] },
    {
      file: 'blocks-0-3.gguf',
      role: 'blocks',
      blocks: [0, 3],
      bytes: 16384,
      sha256: sha('c'),
      tensors: ['blk.0.attn_q.weight'],
    },
    { file: 'head.gguf', role: 'head', blocks: null, bytes: 16384, sha256: sha('d'), tensors: ['output_norm.weight'] },
  ],
}
