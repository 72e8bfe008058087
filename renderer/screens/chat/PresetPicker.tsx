import { BookmarkPlus, Trash2 } from 'lucide-react'
import { useState } from 'react'
import type { SystemPromptPreset } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'
import { ConfirmDialog } from '../../components/ConfirmDialog'
import { ErrorNote } from '../../components/ErrorNote'

interface PresetPickerProps {
  presets: SystemPromptPreset[]
  error: ShownError | null
  /** The system prompt in force: what "Save as preset" keeps. */
  prompt: string
  onApply(prompt: string): void
  onSave(name: string, prompt: string): Promise<boolean>
  onDelete(name: string): Promise<boolean>
}

/** System prompts kept by name: pick one for this chat, keep the current one under a name, delete one. */
export function PresetPicker({ presets, error, prompt, onApply, onSave, onDelete }: PresetPickerProps) {
  const [picked, setPicked] = useState('')
  const [naming, setNaming] = useState<string | null>(null)
  const [deleting, setDeleting] = useState(false)
  const shown = presets.some((p) => p.name === picked) ? picked : ''
  const save = async () => {
    if (naming === null) return
    if (await onSave(naming, prompt)) {
      setPicked(naming.trim())
      setNaming(null)
    }
  }
  return (
    <div className="preset-picker">
      <select
        className="input"
        value={shown}
        aria-label="System prompt presets"
        onChange={(event) => {
          setPicked(event.target.value)
          const preset = presets.find((p) => p.name === event.target.value)
          if (preset !== undefined) onApply(preset.prompt)
        }}
        data-testid="chat-preset-select"
      >
        <option value="" disabled>
          {presets.length === 0 ? 'No saved prompts yet' : 'Use a saved prompt…'}
        </option>
        {presets.map((p) => (
          <option key={p.name} value={p.name}>
            {p.name}
          </option>
        ))}
      </select>
      {naming === null ? (
        <button
          type="button"
          className="button"
          onClick={() => setNaming(shown)}
          title="Keep this system prompt under a name, to use in other chats"
          data-testid="chat-preset-save-open"
        >
          <BookmarkPlus size={14} aria-hidden /> Save as preset
        </button>
      ) : (
        <span className="preset-name">
          <input
            className="input"
            value={naming}
            maxLength={64}
            placeholder="Preset name"
            aria-label="Preset name"
            // biome-ignore lint/a11y/noAutofocus: the user just asked to name it
            autoFocus
            onChange={(event) => setNaming(event.target.value)}
            onKeyDown={(event) => {
              // Escape here cancels the naming, not the answer streaming.
              event.stopPropagation()
              if (event.key === 'Enter') void save()
              if (event.key === 'Escape') setNaming(null)
            }}
            data-testid="chat-preset-name"
          />
          <button type="button" className="button primary" onClick={() => void save()} data-testid="chat-preset-save">
            Save
          </button>
          <button type="button" className="button" onClick={() => setNaming(null)}>
            Cancel
          </button>
        </span>
      )}
      <button
        type="button"
        className="icon-button"
        onClick={() => setDeleting(true)}
        disabled={shown === ''}
        title={shown === '' ? 'Pick a saved prompt to delete it' : `Delete the preset “${shown}”`}
        data-testid="chat-preset-delete"
      >
        <Trash2 size={14} aria-label="Delete this preset" />
      </button>
      {deleting && (
        <ConfirmDialog
          title="Delete this preset?"
          confirmLabel="Delete"
          onConfirm={() => {
            setDeleting(false)
            void onDelete(shown).then((done) => done && setPicked(''))
          }}
          onCancel={() => setDeleting(false)}
          testId="chat-preset-delete-dialog"
        >
          The saved prompt “{shown}” is removed. Chats that use it keep their own copy.
        </ConfirmDialog>
      )}
      <ErrorNote error={error} testId="chat-preset-error" />
    </div>
  )
}
