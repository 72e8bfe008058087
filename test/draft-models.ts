// Draft models for speculative decoding tests and benches: a copy of a model with some blocks' weights zeroed (same
// tokenizer, other predictions: a realistic acceptance rate), and a random model with a vocabulary of its own.
import { copyFile, open } from 'node:fs/promises'
import { generateModel } from '../gguf/generate'
import { readGguf } from '../gguf/reader'

/** `source` with the feed-forward output of blocks `zeroed` set to zero: the same vocabulary, a worse model. */
export async function damagedCopy(source: string, out: string, zeroed: readonly number[]): Promise<string> {
  await copyFile(source, out)
  const file = await readGguf(out)
  const fh = await open(out, 'r+')
  try {
    for (const t of file.tensors)
      if (zeroed.some((b) => t.name === `blk.${b}.ffn_down.weight` || t.name === `blk.${b}.attn_output.weight`))
        await fh.write(new Uint8Array(t.bytes), 0, t.bytes, t.offset)
  } finally {
    await fh.close()
  }
  return out
}

/** A small random llama with `vocab` tokens of generate.ts's own vocabulary (not stories260K's). */
export async function foreignVocabularyModel(out: string, vocab: number): Promise<string> {
  await generateModel({
    arch: 'llama',
    blocks: 1,
    embd: 32,
    heads: 2,
    kvHeads: 2,
    ff: 64,
    vocab,
    type: 'f32',
    seed: 7,
    out,
  })
  return out
}
