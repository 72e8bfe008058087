import type { NeuronBridge } from '../../../protocol/app'
import { NeuronError } from '../../../protocol/errors'
import { type ShownError, shownError } from '../../api/errorText'
import { keptBeside } from './alternatives'
import { contextFit, contextRefusal, conversationSettings, promptMessages, samplingRequest } from './fields'
import type { ChatEntry, ChatState, Conversation } from './initialState'
import { activeConversation, soleModelId, streamingAnswer, titleFrom } from './selectors'

/** What the sending actions need of the store around them. */
export interface SendingContext {
  bridge: NeuronBridge
  get(): ChatState & { setModel(modelId: string): void }
  set(change: Partial<ChatState>): void
  update(id: string, change: (c: Conversation) => Conversation): void
  fail(chatId: string, error: ShownError): void
  newId(): string
  now(): number
}

/** A conversation ready to ask, with its model. */
interface Target {
  conversation: Conversation
  modelId: string
}

/**
 * Sending a turn, editing one, regenerating an answer, stopping one and counting the prompt: each checks that the
 * prompt leaves room in the model's context first (max tokens capped to what is left) and asks chat.send.
 */
export function sendingActions(ctx: SendingContext) {
  const { bridge, get, set, update, newId, now } = ctx
  const byId = (id: string) => get().conversations.find((c) => c.id === id) ?? null

  /** Asks for an answer to the conversation as it is (ending with the user's turn); `pending` takes its place. */
  const answer = async (conversation: Conversation, modelId: string, maxTokens: number, pending: ChatEntry) => {
    const sampling = samplingRequest(conversationSettings(conversation))
    update(conversation.id, (c) => ({ ...c, messages: [...c.messages, pending], updatedAt: now() }))
    try {
      await bridge.call('chat.send', {
        chatId: conversation.id,
        modelId,
        messages: promptMessages(conversation),
        maxTokens,
        ...sampling,
      })
    } catch (error) {
      ctx.fail(conversation.id, shownError(error))
    }
  }
  const streaming = (modelId: string): ChatEntry => ({
    id: newId(),
    role: 'assistant',
    content: '',
    createdAt: now(),
    status: 'streaming',
    modelId,
  })

  /**
   * The max tokens this prompt is sent with (capped to what the context leaves), or why it is not sent: it fills the
   * model's context alone, or the backend refuses its turns (bad_request: too long to count). When it could not be
   * counted for another reason, max tokens as set (chat.send checks again).
   */
  const fitting = async (target: Target, draft?: string): Promise<{ maxTokens: number } | { refused: ShownError }> => {
    const maxTokens = get().maxTokens
    try {
      const messages = promptMessages(target.conversation, draft)
      const count = await bridge.call('chat.count', { modelId: target.modelId, messages })
      const fit = contextFit(count, maxTokens)
      return fit.over ? { refused: contextRefusal(count) } : { maxTokens: fit.maxTokens }
    } catch (error) {
      return error instanceof NeuronError && error.code === 'bad_request'
        ? { refused: shownError(error) }
        : { maxTokens }
    }
  }
  /** Conversations whose prompt is being counted before sending: a second send waits its turn. */
  const asking = new Set<string>()
  /** Appends `content` as the user's turn after `before` (the turns before it), once it fits, and asks the answer. */
  const ask = async (target: Target, before: ChatEntry[], content: string): Promise<boolean> => {
    const { id } = target.conversation
    if (asking.has(id)) return false
    asking.add(id)
    let maxTokens: number
    try {
      const fit = await fitting({ ...target, conversation: { ...target.conversation, messages: before } }, content)
      if ('refused' in fit) {
        set({ composerError: fit.refused })
        return false
      }
      maxTokens = fit.maxTokens
      const user: ChatEntry = { id: newId(), role: 'user', content, createdAt: now() }
      const title = target.conversation.messages.length === 0 ? titleFrom(content) : target.conversation.title
      update(id, (c) => ({ ...c, title, messages: [...before, user], updatedAt: now() }))
    } finally {
      asking.delete(id)
    }
    const conversation = byId(id)
    if (conversation !== null) await answer(conversation, target.modelId, maxTokens, streaming(target.modelId))
    return true
  }

  /** The active conversation and its model, when it may send now; otherwise null, with a composerError saying why. */
  const ready = (): Target | null => {
    const conversation = activeConversation(get())
    if (conversation === null) return null
    // The only model the tracker lists is the one to chat with: nothing to pick.
    const modelId = conversation.modelId ?? soleModelId(get().models)
    if (modelId === null) {
      set({ composerError: { code: 'no_model', message: 'Pick a model to chat with first.' } })
      return null
    }
    if (conversation.modelId === null) get().setModel(modelId)
    if (streamingAnswer(conversation) !== null) {
      set({
        composerError: { code: 'busy', message: 'An answer is still streaming; stop it or wait for it to finish.' },
      })
      return null
    }
    const invalid = Object.values(get().invalidFields).find((m) => m !== undefined)
    if (invalid !== undefined) {
      set({ composerError: { code: 'invalid_field', message: `${invalid} Fix it, then send again.` } })
      return null
    }
    set({ composerError: null })
    return { conversation: byId(conversation.id) ?? conversation, modelId }
  }
  let counted = 0

  return {
    ready,
    /** Whether a turn is being sent to this conversation (its prompt counted): it is not empty for long. */
    asking: (chatId: string) => asking.has(chatId),
    async countPrompt(draft: string) {
      const conversation = activeConversation(get())
      const asked = ++counted
      const messages = conversation === null ? [] : promptMessages(conversation, draft)
      const modelId = conversation === null ? null : (conversation.modelId ?? soleModelId(get().models))
      if (conversation === null || modelId === null || messages.length === 0) return set({ promptCount: null })
      try {
        const count = await bridge.call('chat.count', { modelId, messages })
        const contextLengths = { ...get().contextLengths, [modelId]: count.contextLength }
        if (asked === counted) set({ promptCount: { ...count, conversationId: conversation.id }, contextLengths })
      } catch {
        if (asked === counted) set({ promptCount: null })
      }
    },
    async send(text: string): Promise<boolean> {
      const content = text.trim()
      if (content === '') return false
      const target = ready()
      if (target === null) return false
      return ask(target, target.conversation.messages, content)
    },
    async resend(messageId: string, text: string): Promise<boolean> {
      const content = text.trim()
      const target = ready()
      if (target === null || content === '') return false
      const at = target.conversation.messages.findIndex((m) => m.id === messageId && m.role === 'user')
      if (at < 0) return false
      return ask(target, target.conversation.messages.slice(0, at), content)
    },
    async stop() {
      const conversation = activeConversation(get())
      if (conversation === null || streamingAnswer(conversation) === null) return
      try {
        await bridge.call('chat.stop', { chatId: conversation.id })
      } catch (error) {
        ctx.fail(conversation.id, shownError(error))
      }
    },
    /**
     * A new answer to the same turns (a fresh seed unless the conversation fixed one); the answer it replaces is kept
     * beside it, to page back to.
     */
    async regenerate() {
      const target = ready()
      if (target === null) return
      const last = target.conversation.messages.at(-1)
      if (last?.role !== 'assistant') return
      const before = target.conversation.messages.slice(0, -1)
      const fit = await fitting({ ...target, conversation: { ...target.conversation, messages: before } })
      if ('refused' in fit) return set({ composerError: fit.refused })
      const pending = { ...streaming(target.modelId), ...keptBeside(last) }
      update(target.conversation.id, (c) => ({ ...c, messages: c.messages.slice(0, -1) }))
      const conversation = byId(target.conversation.id)
      if (conversation !== null) await answer(conversation, target.modelId, fit.maxTokens, pending)
    },
  }
}
