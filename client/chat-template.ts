import { type ChatHistoryItem, type ChatWrapper, resolveChatWrapper } from 'node-llama-cpp'
import type { ModelTokenizer } from './tokenizer'

export interface ChatMessage {
  readonly role: 'system' | 'developer' | 'user' | 'assistant'
  readonly content: string
}

const wrappers = new WeakMap<ModelTokenizer, ChatWrapper>()

/**
 * Renders OpenAI `messages` to prompt tokens with the model's own chat template (its GGUF's Jinja
 * template when it has one; node-llama-cpp's closest built-in wrapper otherwise), ending where the
 * assistant's reply begins.
 */
export function renderChat(tokenizer: ModelTokenizer, messages: readonly ChatMessage[]): number[] {
  let wrapper = wrappers.get(tokenizer)
  if (wrapper === undefined) {
    wrapper = resolveChatWrapper(tokenizer.model, { warningLogs: false })
    wrappers.set(tokenizer, wrapper)
  }
  const history: ChatHistoryItem[] = messages.map((m) => {
    if (m.role === 'assistant') return { type: 'model', response: [m.content] }
    if (m.role === 'user') return { type: 'user', text: m.content }
    return { type: 'system', text: m.content }
  })
  // An empty model turn last: the rendering then ends with the assistant's prefix.
  history.push({ type: 'model', response: [] })
  const { contextText } = wrapper.generateContextState({ chatHistory: history })
  return [...contextText.tokenize(tokenizer.model.tokenizer)]
}
