import { SlidersHorizontal } from 'lucide-react'
import { type ReactNode, useState } from 'react'
import type { ChatSettings } from '../../../protocol/app'
import { MAX_SYSTEM_PROMPT_CHARS } from '../../../protocol/app'
import { type NumberField as Field, parseStops, stopsText } from '../../stores/chat/fields'
import { NumberField } from './NumberField'

interface SettingsPanelProps {
  /** Remounts the fields when another conversation is shown. */
  conversationId: string
  settings: Required<ChatSettings>
  onChange(change: Partial<ChatSettings>): void
  onInvalid(field: Field | 'stop', message: string | null): void
  /** The saved system prompts, under the system prompt. */
  presets?: ReactNode
}

const SAMPLING: readonly Exclude<Field, 'maxTokens' | 'seed'>[] = [
  'temperature',
  'topP',
  'topK',
  'minP',
  'repeatPenalty',
]

/** The conversation's system prompt and sampling, folded away until wanted. */
export function SettingsPanel({ conversationId, settings, onChange, onInvalid, presets }: SettingsPanelProps) {
  return (
    <details className="chat-settings" data-testid="chat-settings">
      <summary data-testid="chat-settings-toggle">
        <SlidersHorizontal size={14} aria-hidden /> System prompt and sampling
        <span className="muted small">
          {' '}
          temperature {settings.temperature}, {settings.seed === null ? 'random seed' : `seed ${settings.seed}`}
          {settings.systemPrompt.trim() === '' ? '' : ', system prompt set'}
          {settings.stop.length === 0
            ? ''
            : `, ${settings.stop.length} stop sequence${settings.stop.length > 1 ? 's' : ''}`}
        </span>
      </summary>
      <div className="chat-settings-body" key={conversationId}>
        <label className="system-prompt">
          <span className="field-label">System prompt</span>
          <textarea
            className="input"
            rows={2}
            maxLength={MAX_SYSTEM_PROMPT_CHARS}
            // A preset picked replaces the text: a new key shows it.
            key={settings.systemPrompt}
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
        {presets}
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
        <StopField
          stops={settings.stop}
          onChange={(stop) => onChange({ stop })}
          onInvalid={(m) => onInvalid('stop', m)}
        />
        <p className="muted small">
          Temperature 0 always gives the same answer; above it, each answer (and each regenerate) samples anew unless a
          seed is fixed.
        </p>
      </div>
    </details>
  )
}

/** Stop sequences, one a line: taken as typed when valid; otherwise why not, under the field. */
function StopField({
  stops,
  onChange,
  onInvalid,
}: {
  stops: readonly string[]
  onChange(stops: string[]): void
  onInvalid(message: string | null): void
}) {
  const [text, setText] = useState(() => stopsText(stops))
  const [problem, setProblem] = useState<string | null>(null)
  return (
    <label className="stop-sequences" htmlFor="chat-field-stop">
      <span className="field-label">Stop sequences</span>
      <textarea
        id="chat-field-stop"
        className="input"
        rows={2}
        value={text}
        placeholder={'One a line, e.g. "User:" (\\n for a line break)'}
        aria-invalid={problem !== null}
        aria-describedby={problem === null ? undefined : 'chat-field-stop-error'}
        onChange={(event) => {
          setText(event.target.value)
          const parsed = parseStops(event.target.value)
          setProblem(parsed.ok ? null : parsed.message)
          onInvalid(parsed.ok ? null : parsed.message)
        }}
        // Taken when the user leaves the box, as the system prompt is: each change is a durable write.
        onBlur={() => {
          const parsed = parseStops(text)
          if (parsed.ok && parsed.value.join('\n') !== stops.join('\n')) onChange(parsed.value)
        }}
        data-testid="chat-setting-stop"
      />
      {problem !== null && (
        <span className="field-error" id="chat-field-stop-error" role="alert" data-testid="chat-field-error-stop">
          {problem}
        </span>
      )}
    </label>
  )
}
