// The app's and `neuron chat`'s prompt rendering (renderChat, on the tokenizer a client loads from the tracker)
// through real chat templates: Llama 3's, Qwen 3's, DeepSeek V3's and gpt-oss's harmony, on models with those real
// vocabularies (test/real-vocab-models.ts). The reference is node-llama-cpp's rendering of the same conversation.
import { type ChatHistoryItem, getLlama, LlamaLogLevel, resolveChatWrapper } from 'node-llama-cpp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readGguf } from '../gguf/reader'
import { tokenizerGgufOf } from '../gguf/tokenizer'
import { scratchDir } from '../test/models'
import { REAL_VOCABS, realVocabModel } from '../test/real-vocab-models'
import { type ChatMessage, renderChat } from './chat-template'
import { ModelTokenizer } from './tokenizer'

const CONVERSATION: ChatMessage[] = [
  { role: 'system', content: 'You are a terse assistant. Réponds brièvement.' },
  { role: 'user', content: 'Name a cat 🐱 in three letters.' },
  { role: 'assistant', content: 'Tom.' },
  { role: 'user', content: '再来一个？ And one more, with "quotes" and a\nnew line.' },
]
const HISTORY: ChatHistoryItem[] = [
  { type: 'system', text: 'You are a terse assistant. Réponds brièvement.' },
  { type: 'user', text: 'Name a cat 🐱 in three letters.' },
  { type: 'model', response: ['Tom.'] },
  { type: 'user', text: '再来一个？ And one more, with "quotes" and a\nnew line.' },
  { type: 'model', response: [] },
]

let dir = ''
let cleanup = async () => {}
beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir('neuron-render-'))
})
afterAll(() => cleanup())

describe('chat rendering through real templates, as the app and neuron chat render a conversation', () => {
  for (const vocab of REAL_VOCABS) {
    it(`${vocab}: renderChat on the tracker's tokenizer file gives node-llama-cpp's tokens for the model`, async () => {
      const path = await realVocabModel(vocab, dir)
      // What a client gets: the metadata-only tokenizer GGUF the tracker serves.
      const tokenizer = await ModelTokenizer.load(vocab, tokenizerGgufOf(await readGguf(path)))
      const ours = renderChat(tokenizer, CONVERSATION)
      const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, logger: () => {} })
      const model = await llama.loadModel({ modelPath: path, vocabOnly: true })
      const wrapper = resolveChatWrapper(model, { warningLogs: false })
      const reference = [
        ...(wrapper?.generateContextState({ chatHistory: HISTORY }).contextText.tokenize(model.tokenizer) ?? []),
      ]
      // The user's last words are in the prompt, byte for byte.
      const text = tokenizer.decode(ours)
      await model.dispose()
      await tokenizer.model.dispose()
      expect(ours.length).toBeGreaterThan(30)
      expect(ours).toEqual(reference)
      expect(text).toContain('再来一个？')
    }, 120_000)
  }
})
