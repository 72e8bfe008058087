import { useState } from 'react'
import type { Limits } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'
import { ErrorNote } from '../../components/ErrorNote'
import { Panel } from '../../components/Panel'
import { type LimitsForm, limitsToForm } from '../../stores/settings/limitsForm'

interface LimitsSectionProps {
  limits: Limits
  saving: boolean
  error: ShownError | null
  onSave(form: LimitsForm): void
}

export function LimitsSection({ limits, saving, error, onSave }: LimitsSectionProps) {
  const [form, setForm] = useState(() => limitsToForm(limits))
  const field = (
    key: 'diskGb' | 'memoryGb' | 'threads',
    label: string,
    testId: string,
    placeholder: string,
    unit: string,
  ) => (
    <label className="limit-field">
      <span className="field-label">{label}</span>
      <span className="unit-input">
        <input
          className="input"
          inputMode="decimal"
          value={form[key]}
          placeholder={placeholder}
          onChange={(event) => setForm({ ...form, [key]: event.target.value })}
          data-testid={testId}
        />
        <span className="unit">{unit}</span>
      </span>
    </label>
  )
  return (
    <Panel title="Limits">
      <form
        onSubmit={(event) => {
          event.preventDefault()
          onSave(form)
        }}
      >
        <div className="limits-grid">
          {field('diskGb', 'Disk', 'settings-limit-disk', 'no limit', 'GB')}
          {field('memoryGb', 'Memory', 'settings-limit-memory', 'no limit', 'GB')}
          {field('threads', 'Threads', 'settings-limit-threads', '8', 'threads')}
          <label className="limit-field checkbox">
            <input
              type="checkbox"
              checked={form.useGpu}
              onChange={(event) => setForm({ ...form, useGpu: event.target.checked })}
              data-testid="settings-limit-gpu"
            />
            <span>Use GPU when the runtime can</span>
          </label>
        </div>
        <p className="muted small">
          Leave disk or memory empty for no limit beyond what the computer has. Threads: by default one per physical
          core, less one on computers of up to 4 cores, so the app, its swarm connection and your other programs keep a
          core (ggml's threads wait on each other, and one kept waiting slows every step). More threads than physical
          cores slows ggml down.
        </p>
        <div className="button-row">
          <button type="submit" className="button primary" disabled={saving} data-testid="settings-limits-save">
            {saving ? 'Saving…' : 'Save limits'}
          </button>
        </div>
        <ErrorNote error={error} testId="settings-limits-error" />
      </form>
    </Panel>
  )
}
