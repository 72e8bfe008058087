import { useCallback, useEffect, useRef, useState } from 'react'
import { useStore } from 'zustand'
import { MAX_CONVERSATION_CHARS } from '../../protocol/app'
import { ErrorNote } from '../components/ErrorNote'
import { contextFit, conversationSettings } from '../stores/chat/fields'
import { privacyNotice } from '../stores/chat/privacy'
import { activeConversation, canRegenerate, modelLabel, shownModelId, streamingAnswer } from '../stores/chat/selectors'
import { useStores } from '../stores/context'
import { Composer } from './chat/Composer'
import { ConversationList } from './chat/ConversationList'
import { ExportMenu } from './chat/ExportMenu'
import { MessageView } from './chat/MessageView'
import { NumberField } from './chat/NumberField'
import { PresetPicker } from './chat/PresetPicker'
import { PrivacyConsent, PrivacyNote } from './chat/PrivacyNote'
import { SettingsPanel } from './chat/SettingsPanel'
import { UndoDelete } from './chat/UndoDelete'

/** A conversation is kept up to MAX_CONVERSATION_CHARS characters: a file past 4 bytes each is none. */
const MAX_IMPORT_BYTES = 4 * MAX_CONVERSATION_CHARS

export function ChatScreen() {
  const { chat, settings } = useStores()
  const state = useStore(chat)
  const swarm = useStore(settings)
  const privacy = swarm.settings === null ? null : privacyNotice(swarm.settings)
  const conversation = activeConversation(state)
  const streaming = streamingAnswer(conversation) !== null
  const thread = useRef<HTMLDivElement>(null)
  const lastContent = conversation?.messages.at(-1)?.content
  const settingsOf = conversationSettings(conversation)
  const [draft, setDraft] = useState('')
  const onDraft = useCallback(
    (text: string) => {
      setDraft(text)
      chat.getState().draftChanged()
    },
    [chat],
  )
  const modelId = shownModelId(conversation, state.models)
  const contextLength = modelId === null ? undefined : state.contextLengths[modelId]
  const count = state.promptCount
  const fit = count !== null && count.conversationId === conversation?.id ? contextFit(count, state.maxTokens) : null

  useEffect(() => {
    void chat.getState().loadModels()
    void chat.getState().loadPresets()
  }, [chat])

  /** Reads a conversation file (refusing one far too big to be a chat before reading it) and imports it. */
  const importChat = async (file: File) => {
    if (file.size > MAX_IMPORT_BYTES) {
      const message = `${file.name} was not imported: at ${file.size} bytes it is too big to be a conversation.`
      return chat.setState({ importError: { code: 'not_imported', message } })
    }
    chat.getState().importFile(file.name, await file.text())
  }

  useEffect(() => {
    if (modelId !== null) void chat.getState().loadContext(modelId)
  }, [chat, modelId])

  // The prompt's tokens, counted again a moment after the user stops typing or the conversation changes.
  // biome-ignore lint/correctness/useExhaustiveDependencies: these are what the count depends on
  useEffect(() => {
    const timer = setTimeout(() => void chat.getState().countPrompt(draft), 250)
    return () => clearTimeout(timer)
  }, [
    chat,
    draft,
    conversation?.id,
    conversation?.modelId,
    conversation?.messages.length,
    conversation?.messages.at(-1)?.status,
    settingsOf.systemPrompt,
  ])

  // Escape stops the running answer from anywhere on this screen.
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key === 'Escape') void chat.getState().stop()
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [chat])

  // biome-ignore lint/correctness/useExhaustiveDependencies: follow the newest tokens as they stream in
  useEffect(() => {
    thread.current?.scrollTo({ top: thread.current.scrollHeight })
  }, [lastContent, conversation?.messages.length])

  return (
    <div className="screen chat-screen" data-testid="screen-chat">
      <ConversationList
        conversations={state.conversations}
        activeId={state.activeId}
        onNew={() => state.newConversation()}
        onSelect={state.select}
        onDelete={state.remove}
        onRename={state.rename}
        onImport={(file) => void importChat(file)}
        importError={state.importError}
      />
      <section className="chat-main">
        <header className="chat-header">
          <label className="model-select">
            <span className="field-label">Model</span>
            <select
              className="input"
              value={modelId ?? ''}
              onChange={(event) => {
                if (conversation === null) state.newConversation()
                state.setModel(event.target.value)
              }}
              data-testid="chat-model-select"
            >
              <option value="" disabled>
                {state.models.length === 0 ? 'No models on the tracker' : 'Pick a model'}
              </option>
              {state.models.map((m) => (
                <option key={m.modelId} value={m.modelId}>
                  {modelLabel(m)}
                </option>
              ))}
            </select>
          </label>
          <NumberField
            field="maxTokens"
            className="max-tokens"
            value={state.maxTokens}
            limit={contextLength}
            onValue={(value) => value !== null && state.setMaxTokens(value)}
            onInvalid={(message) => state.setFieldError('maxTokens', message)}
          />
          {conversation !== null && conversation.messages.length > 0 && <ExportMenu conversation={conversation} />}
          {privacy !== null && <PrivacyNote notice={privacy} />}
        </header>
        {conversation !== null && (
          <SettingsPanel
            conversationId={conversation.id}
            settings={settingsOf}
            onChange={state.setSettings}
            onInvalid={(field, message) => state.setFieldError(field, message)}
            presets={
              <PresetPicker
                presets={state.presets}
                error={state.presetsError}
                prompt={settingsOf.systemPrompt}
                onApply={(systemPrompt) => state.setSettings({ systemPrompt })}
                onSave={state.savePreset}
                onDelete={state.deletePreset}
              />
            }
          />
        )}
        <ErrorNote error={state.modelsError} />
        <ErrorNote error={state.historyError} testId="chat-history-error" />
        <div
          className="thread"
          ref={thread}
          role="log"
          aria-live="polite"
          aria-label="Conversation"
          data-testid="chat-thread"
        >
          {conversation === null || conversation.messages.length === 0 ? (
            <div className="thread-empty">
              <h2>Ask the swarm</h2>
              <p className="muted">
                Each answer is computed block by block by the hosts on your tracker. The route that served it shows
                under the answer.
              </p>
              {privacy !== null && (
                <p className="muted small" data-testid="chat-privacy-detail">
                  {privacy.detail}
                </p>
              )}
            </div>
          ) : (
            conversation.messages.map((message) => (
              <MessageView
                key={message.id}
                message={message}
                onResend={streaming ? undefined : (text) => state.resend(message.id, text)}
                onShow={streaming ? undefined : (index) => state.showAnswer(message.id, index)}
                onDelete={streaming ? undefined : () => state.deleteMessage(message.id)}
                ownHostId={swarm.settings?.hostId ?? null}
              />
            ))
          )}
        </div>
        {state.deletedMessage !== null && state.deletedMessage.conversationId === conversation?.id && (
          <UndoDelete role={state.deletedMessage.entry.role} onUndo={state.undoDelete} onForget={state.forgetDeleted} />
        )}
        <ErrorNote error={state.composerError} testId="chat-error" />
        {privacy?.needsConsent ? (
          <PrivacyConsent
            notice={privacy}
            busy={swarm.saving === 'consent'}
            error={swarm.consentError}
            onAgree={() => void swarm.consent()}
          />
        ) : (
          <Composer
            streaming={streaming}
            canRegenerate={canRegenerate(conversation)}
            fit={fit}
            onSend={state.send}
            onDraft={onDraft}
            onStop={() => void state.stop()}
            onRegenerate={() => void state.regenerate()}
          />
        )}
      </section>
    </div>
  )
}
