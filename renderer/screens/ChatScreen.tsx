import { useEffect, useRef } from 'react'
import { useStore } from 'zustand'
import { ErrorNote } from '../components/ErrorNote'
import { privacyNotice } from '../stores/chat/privacy'
import { activeConversation, canRegenerate, streamingAnswer } from '../stores/chat/selectors'
import { useStores } from '../stores/context'
import { Composer } from './chat/Composer'
import { ConversationList } from './chat/ConversationList'
import { MessageView } from './chat/MessageView'
import { PrivacyConsent, PrivacyNote } from './chat/PrivacyNote'

export function ChatScreen() {
  const { chat, settings } = useStores()
  const state = useStore(chat)
  const swarm = useStore(settings)
  const privacy = swarm.settings === null ? null : privacyNotice(swarm.settings)
  const conversation = activeConversation(state)
  const streaming = streamingAnswer(conversation) !== null
  const thread = useRef<HTMLDivElement>(null)
  const lastContent = conversation?.messages.at(-1)?.content

  useEffect(() => {
    void chat.getState().loadModels()
  }, [chat])

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
      />
      <section className="chat-main">
        <header className="chat-header">
          <label className="model-select">
            <span className="field-label">Model</span>
            <select
              className="input"
              value={conversation?.modelId ?? ''}
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
                  {m.name} ({m.modelId})
                </option>
              ))}
            </select>
          </label>
          <label className="max-tokens">
            <span className="field-label">Max tokens</span>
            <input
              className="input"
              type="number"
              min={1}
              max={4096}
              value={state.maxTokens}
              onChange={(event) => state.setMaxTokens(Number(event.target.value))}
              data-testid="chat-max-tokens"
            />
          </label>
          {privacy !== null && <PrivacyNote notice={privacy} />}
        </header>
        <ErrorNote error={state.modelsError} />
        <ErrorNote error={state.historyError} testId="chat-history-error" />
        <div className="thread" ref={thread}>
          {conversation === null || conversation.messages.length === 0 ? (
            <div className="thread-empty">
              <h2>Ask the swarm</h2>
              <p className="muted">Each answer is computed block by block by the hosts on your tracker. The route that served it shows under the answer.</p>
              {privacy !== null && (
                <p className="muted small" data-testid="chat-privacy-detail">
                  {privacy.detail}
                </p>
              )}
            </div>
          ) : (
            conversation.messages.map((message) => <MessageView key={message.id} message={message} />)
          )}
        </div>
        <ErrorNote error={state.composerError} testId="chat-error" />
        {privacy?.needsConsent ? (
          <PrivacyConsent notice={privacy} busy={swarm.saving === 'consent'} error={swarm.consentError} onAgree={() => void swarm.consent()} />
        ) : (
          <Composer
            streaming={streaming}
            canRegenerate={canRegenerate(conversation)}
            onSend={(text) => void state.send(text)}
            onStop={() => void state.stop()}
            onRegenerate={() => void state.regenerate()}
          />
        )}
      </section>
    </div>
  )
}
