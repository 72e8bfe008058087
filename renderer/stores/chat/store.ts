import { createStore } from 'zustand/vanilla'
import type { ChatSettings, NeuronBridge } from '../../../protocol/app'
import { type ShownError, shownError } from '../../api/errorText'
import { showVersion } from './alternatives'
import { conversationSettings } from './fields'
import { conversationHistory, interrupted, type LegacyStorage } from './history'
import { importConversation } from './import'
import { type ChatEntry, type ChatState, type Conversation, initialChatState } from './initialState'
import { initialPresetState, type PresetActions, type PresetState, presetActions } from './presets'
import {
  activeConversation,
  conversationList,
  shownModelId,
  soleModelId,
  streamingAnswer,
  withoutEmpty,
} from './selectors'
import { sendingActions } from './sending'

export interface ChatActions {
  /** Loads the conversations the backend keeps (on every connection; those already here stay as they are). */
  loadConversations(): Promise<void>
  loadModels(): Promise<void>
  newConversation(): string
  select(id: string): void
  remove(id: string): void
  setModel(modelId: string): void
  setMaxTokens(maxTokens: number): void
  /** Changes the active conversation's system prompt or sampling. */
  setSettings(change: Partial<ChatSettings>): void
  /** Marks a number field's text as invalid (with why) or valid again (null). */
  setFieldError(field: string, message: string | null): void
  rename(id: string, title: string): void
  /** Counts the active conversation's prompt with `draft` as the next turn (promptCount); newer counts win. */
  countPrompt(draft: string): Promise<void>
  /**
   * Appends the user's turn and a streaming answer, then asks the backend for it; false, with a
   * composerError saying why, when it was not sent (e.g. the prompt does not fit the model's context).
   */
  send(text: string): Promise<boolean>
  /** Replaces a user's turn with `text`, drops everything after it, and asks again; false when not sent. */
  resend(messageId: string, text: string): Promise<boolean>
  stop(): Promise<void>
  /** Asks again for the last answer (a fresh seed unless fixed); the answer it replaces is kept to page back to. */
  regenerate(): Promise<void>
  /** Shows a turn's answer at `index` (0-based) of those regenerated: the one the conversation goes on from. */
  showAnswer(messageId: string, index: number): void
  /** Takes one turn out of the active conversation (not while an answer streams); undoDelete puts it back. */
  deleteMessage(messageId: string): void
  /** Puts the turn deleted last back where it was. */
  undoDelete(): void
  /** Forgets the turn deleted last: it can no longer be put back. */
  forgetDeleted(): void
  /**
   * Adds the conversation a file holds (this app's JSON export, or an OpenAI-style chat) and shows it; false, with
   * importError saying why, when it holds none: nothing changes then.
   */
  importFile(fileName: string, text: string): boolean
  /** The composer's text changed: a refusal for the old text (context_exceeded) no longer holds. */
  draftChanged(): void
  /** Learns the model's context length (contextLengths), which bounds max tokens. */
  loadContext(modelId: string): Promise<void>
  /**
   * Ends these answers, if still streaming, as cut off by a dropped connection (their chat.done or
   * chat.error may have been pushed while it was down), and asks the backend to stop them.
   */
  interrupt(answerIds: readonly string[]): void
  /** Routes chat.token/route/done/error events into their conversations; returns the unsubscribe. */
  subscribe(): () => void
}
export type ChatStore = ChatState & ChatActions & PresetState & PresetActions

export interface ChatStoreOptions {
  /**
   * Where the chat kept conversations before the backend did
   * (the app passes localStorage): imported once, then cleared.
   */
  legacy?: LegacyStorage
  newId?: () => string
  now?: () => number
}

/** A chat id the contract accepts (/^[A-Za-z0-9_-]{1,64}$/): a UUID without its dashes. */
export const randomChatId = () => crypto.randomUUID().replaceAll('-', '')

const CONNECTION_DROPPED: ShownError = {
  code: 'interrupted',
  message: 'The connection to the Neuron host dropped while this answer was streaming; regenerate to try again.',
}

const maxTokensOnly = (invalid: ChatState['invalidFields']): ChatState['invalidFields'] =>
  invalid.maxTokens === undefined ? {} : { maxTokens: invalid.maxTokens }

export function createChatStore(bridge: NeuronBridge, options: ChatStoreOptions = {}) {
  const newId = options.newId ?? randomChatId
  const now = options.now ?? Date.now
  const history = conversationHistory(bridge, options.legacy)

  const store = createStore<ChatStore>()((set, get) => {
    const update = (id: string, change: (c: Conversation) => Conversation) =>
      set((s) => ({ conversations: s.conversations.map((c) => (c.id === id ? change(c) : c)) }))
    /** Changes the conversation's running answer; events for an answer already finished are ignored. */
    const updateAnswer = (chatId: string, change: (m: ChatEntry) => ChatEntry) =>
      update(chatId, (c) => {
        const answer = streamingAnswer(c)
        return answer === null
          ? c
          : { ...c, messages: c.messages.map((m) => (m === answer ? change(m) : m)), updatedAt: now() }
      })
    const fail = (chatId: string, error: ShownError) => updateAnswer(chatId, (m) => ({ ...m, status: 'error', error }))

    const sending = sendingActions({
      bridge,
      get,
      set,
      update,
      fail,
      newId,
      now,
    })

    return {
      ...initialChatState,
      ...initialPresetState,
      ...presetActions(bridge, set),
      async loadConversations() {
        try {
          const { conversations, problems } = await history.load()
          const here = new Set(get().conversations.map((c) => c.id))
          const loaded = conversations.filter((c) => !here.has(c.id)).map(interrupted)
          history.adopt(loaded)
          // An empty "New chat" kept when the app closed is not kept again: the sync this causes deletes it.
          const added = withoutEmpty(loaded, () => false)
          set((s) => {
            const all = [...s.conversations, ...added]
            const historyError =
              problems.length === 0 ? null : { code: 'unreadable_history', message: problems.join(' ') }
            return { conversations: all, activeId: s.activeId ?? conversationList(all)[0]?.id ?? null, historyError }
          })
        } catch (error) {
          set({ historyError: shownError(error) })
        }
      },
      async loadModels() {
        try {
          const { models } = await bridge.call('models.list', {})
          set({ models, modelsError: null })
          const conversation = activeConversation(get())
          const first = models[0]
          if (conversation !== null && conversation.modelId === null && first !== undefined)
            get().setModel(first.modelId)
        } catch (error) {
          set({ modelsError: shownError(error) })
        }
      },
      newConversation() {
        const id = newId()
        const modelId =
          activeConversation(get())?.modelId ?? soleModelId(get().models) ?? get().models[0]?.modelId ?? null
        const conversation: Conversation = {
          id,
          title: 'New chat',
          modelId,
          messages: [],
          createdAt: now(),
          updatedAt: now(),
        }
        // An empty chat left behind is not kept (one "New chat" at a time).
        set((s) => ({
          conversations: [conversation, ...withoutEmpty(s.conversations, sending.asking)],
          activeId: id,
          composerError: null,
          invalidFields: maxTokensOnly(s.invalidFields),
        }))
        return id
      },
      select(id) {
        // The other conversation's fields show its own valid settings; only max tokens, shared by all, stays as typed.
        // The empty chat the user leaves is not kept.
        set((s) => ({
          conversations: withoutEmpty(s.conversations, (c) => c === id || sending.asking(c)),
          activeId: id,
          composerError: null,
          invalidFields: maxTokensOnly(s.invalidFields),
        }))
      },
      remove(id) {
        const conversation = get().conversations.find((c) => c.id === id)
        if (conversation !== undefined && streamingAnswer(conversation) !== null)
          bridge.call('chat.stop', { chatId: id }).catch(() => {})
        set((s) => {
          const conversations = s.conversations.filter((c) => c.id !== id)
          return { conversations, activeId: s.activeId === id ? (conversations[0]?.id ?? null) : s.activeId }
        })
      },
      setModel(modelId) {
        const id = get().activeId
        if (id === null) return
        update(id, (c) => ({ ...c, modelId }))
        set({ composerError: null })
      },
      setMaxTokens(maxTokens) {
        if (Number.isInteger(maxTokens) && maxTokens > 0 && maxTokens <= 4096) set({ maxTokens })
      },
      setSettings(change) {
        const id = get().activeId
        if (id !== null) update(id, (c) => ({ ...c, settings: { ...conversationSettings(c), ...change } }))
      },
      setFieldError(field, message) {
        set((s) => {
          const { [field]: _, ...others } = s.invalidFields
          const invalidFields = message === null ? others : { ...others, [field]: message }
          const composerError = s.composerError?.code === 'invalid_field' && message === null ? null : s.composerError
          return { invalidFields, composerError }
        })
      },
      rename(id, title) {
        const name = title.trim().replace(/\s+/g, ' ').slice(0, 256)
        if (name !== '') update(id, (c) => ({ ...c, title: name, updatedAt: now() }))
      },
      countPrompt: sending.countPrompt,
      async send(text) {
        if (activeConversation(get()) === null) get().newConversation()
        const sent = await sending.send(text)
        // The thread went on: a deleted turn put back now would land in the middle of it.
        if (sent) set({ deletedMessage: null })
        return sent
      },
      async resend(messageId, text) {
        const sent = await sending.resend(messageId, text)
        if (sent) set({ deletedMessage: null })
        return sent
      },
      stop: sending.stop,
      regenerate: sending.regenerate,
      showAnswer(messageId, index) {
        const conversation = activeConversation(get())
        if (conversation === null || streamingAnswer(conversation) !== null) return
        update(conversation.id, (c) => ({
          ...c,
          messages: c.messages.map((m) => (m.id === messageId ? showVersion(m, index) : m)),
          updatedAt: now(),
        }))
      },
      deleteMessage(messageId) {
        const conversation = activeConversation(get())
        if (conversation === null || streamingAnswer(conversation) !== null) return
        const index = conversation.messages.findIndex((m) => m.id === messageId)
        const entry = conversation.messages[index]
        if (entry === undefined) return
        update(conversation.id, (c) => ({ ...c, messages: c.messages.filter((m) => m !== entry), updatedAt: now() }))
        set({ deletedMessage: { conversationId: conversation.id, index, entry } })
      },
      undoDelete() {
        const deleted = get().deletedMessage
        if (deleted === null) return
        set({ deletedMessage: null })
        update(deleted.conversationId, (c) => {
          if (streamingAnswer(c) !== null) return c
          const messages = [...c.messages]
          messages.splice(deleted.index, 0, deleted.entry)
          return { ...c, messages, updatedAt: now() }
        })
      },
      forgetDeleted() {
        set({ deletedMessage: null })
      },
      importFile(fileName, text) {
        const { models } = get()
        const imported = importConversation(fileName, text, {
          newId,
          now,
          modelIds: models.map((m) => m.modelId),
          modelId: shownModelId(activeConversation(get()), models) ?? models[0]?.modelId ?? null,
        })
        if (!imported.ok) {
          set({ importError: { code: 'not_imported', message: imported.message } })
          return false
        }
        const { conversation } = imported
        set((s) => ({
          conversations: [conversation, ...withoutEmpty(s.conversations, sending.asking)],
          activeId: conversation.id,
          importError: null,
          composerError: null,
          invalidFields: maxTokensOnly(s.invalidFields),
        }))
        return true
      },
      draftChanged() {
        if (get().composerError?.code === 'context_exceeded') set({ composerError: null })
      },
      async loadContext(modelId) {
        if (get().contextLengths[modelId] !== undefined) return
        try {
          const { contextLength } = await bridge.call('chat.context', { modelId })
          set((s) => ({ contextLengths: { ...s.contextLengths, [modelId]: contextLength } }))
        } catch {
          // Unknown for now: the field keeps its own bound, and the next count says the context.
        }
      },
      interrupt(answerIds) {
        const cut = new Set(answerIds)
        for (const conversation of get().conversations) {
          const answer = streamingAnswer(conversation)
          if (answer === null || !cut.has(answer.id)) continue
          fail(conversation.id, CONNECTION_DROPPED)
          // The backend may still be generating it, and would refuse the regenerate as chat_busy.
          bridge.call('chat.stop', { chatId: conversation.id }).catch(() => {})
        }
      },
      subscribe() {
        const offs = [
          bridge.on('chat.token', ({ chatId, text }) =>
            updateAnswer(chatId, (m) => ({ ...m, content: m.content + text })),
          ),
          bridge.on('chat.route', ({ chatId, hops }) => updateAnswer(chatId, (m) => ({ ...m, route: hops }))),
          bridge.on('chat.done', (summary) =>
            updateAnswer(summary.chatId, (m) => ({ ...m, status: 'done', summary, route: summary.route })),
          ),
          bridge.on('chat.error', ({ chatId, error }) => fail(chatId, shownError(error))),
        ]
        return () => {
          for (const off of offs) off()
        }
      },
    }
  })
  // Every change reaches the backend (tokens once their answer ends), in the order made.
  store.subscribe((state, previous) => {
    if (state.conversations !== previous.conversations)
      history.sync(previous.conversations, state.conversations, (historyError) => store.setState({ historyError }))
  })
  return store
}
