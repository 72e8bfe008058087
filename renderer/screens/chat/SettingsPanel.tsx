import { SlidersHorizontal } from 'lucide-react'
import type { ChatSettings } from '../../../protocol/app'
import { MAX_SYSTEM_PROMPT_CHARS } from '../../../protocol/app'
import type { NumberField as Field } from '../../stores/chat/fields'
import { NumberField } from './NumberField'

interface SettingsPanelProps {
  /** Remounts the fields when another conversation is shown. */
  conversationId: string
  settings: ChatSettings
  onChange(change: Partial<ChatSettings>): void
  onInvalid(field: Field, message: string | null): void
}

const SAMPLING: readonly Exclude<Field, 'maxTokens' | 'seed'>[] = ['temperature', 'topP', 'topK', 'repeatPenalty']

/** The conversation's system prompt and sampling, folded away until wanted. */
export function SettingsPanel({ conversationId, settings, onChange, onInvalid }: SettingsPanelProps) {
  return (
    <details className="chat-settings" data-testid="chat-settings">
      <summary data-testid="chat-settings-toggle">
        <SlidersHorizontal size={14} aria-hidden /> System prompt and sampling
        <span className="muted small">
          {' '}
          temperature {settings.temperature}, {settings.seed === null ? 'random seed' : `seed ${settings.seed}`}
          {settings.systemPrompt.trim() === '' ? '' : ', system prompt set'}
        </span>
      </summary>
      <div className="chat-settings-body" key={conversationId}>
        <label className="system-prompt">
          <span className="field-label">System prompt</span>
          <textarea
            className="input"
            rows={2}
            maxLength={MAX_SYSTEM_PROMPT_CHARS}
            defaultValue={settings.systemPrompt}
            placeholder="How the model should answer in this chat (optional)"
            // Taken when the user leaves the box, not per keystroke:
            // each change is a durable write of the conversation.
            onBlur={(event) =>
              event.target.value !== settings.systemPrompt && onChange({ systemPrompt: event.target.value })
            }
            data-testid="chat-setting-system"
          />
        </label>
        <div className="sampling-fields">
          {SAMPLING.map((field) => (
            <NumberField
              key={field}
              field={field}
              value={settings[field]}
              onValue={(value) => value !== null && onChange({ [field]: value })}
              onInvalid={(message) => onInvalid(field, message)}
            />
          ))}
          <NumberField
            field="seed"
            value={settings.seed}
            placeholder="random"
            onValue={(seed) => onChange({ seed })}
            onInvalid={(message) => onInvalid('seed', message)}
          />
        </div>
        <p className="muted small">
          Temperature 0 always gives the same answer; above it, each answer (and each regenerate) samples anew unless a
          seed is fixed.
        </p>
      </div>
    </details>
  )
}
