import { FilePlus2, FolderOpen } from 'lucide-react'
import { useState } from 'react'
import type { ShownError } from '../../api/errorText'
import { ErrorNote } from '../../components/ErrorNote'

interface AddModelFormProps {
  adding: boolean
  error: ShownError | null
  onAdd(path: string): void
  /** The path changed: an error about the old one goes. */
  onEdit(): void
  /** The OS file dialog, where the backend has one (Electron); null in a browser, which cannot give a path. */
  onPick: (() => Promise<string | null>) | null
}

/** Publishes a GGUF on this computer, by its path or (in Electron) picked with the file dialog. */
export function AddModelForm({ adding, error, onAdd, onEdit, onPick }: AddModelFormProps) {
  const [path, setPath] = useState('')
  return (
    <form
      className="add-model"
      onSubmit={(event) => {
        event.preventDefault()
        onAdd(path)
      }}
    >
      <label htmlFor="add-model-path" className="field-label">
        Add a GGUF file
      </label>
      <div className="inline-field">
        <input
          id="add-model-path"
          className="input mono"
          placeholder="/path/to/model.gguf"
          value={path}
          onChange={(event) => {
            setPath(event.target.value)
            onEdit()
          }}
          data-testid="add-model-path"
          spellCheck={false}
        />
        {onPick !== null && (
          <button
            type="button"
            className="button"
            disabled={adding}
            data-testid="add-model-browse"
            onClick={() =>
              void onPick().then((picked) => {
                if (picked === null) return
                setPath(picked)
                onEdit()
              })
            }
          >
            <FolderOpen size={16} aria-hidden /> Browse…
          </button>
        )}
        <button type="submit" className="button" disabled={adding} data-testid="add-model-submit">
          <FilePlus2 size={16} aria-hidden /> {adding ? 'Packing…' : 'Add'}
        </button>
      </div>
      <p className="muted small">
        The file is split into per-block artifacts and published to the tracker; this app seeds it.
      </p>
      <ErrorNote error={error} testId="add-model-error" />
    </form>
  )
}
