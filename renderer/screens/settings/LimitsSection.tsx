import { useState } from 'react'
import type { Limits } from '../../../protocol/app'
import type { ShownError } from '../../api/errorText'
import { ErrorNote } from '../../components/ErrorNote'
import { Panel } from '../../components/Panel'
import { type LimitErrors, type LimitField, type LimitsForm, limitsToForm } from '../../stores/settings/limitsForm'

interface LimitsSectionProps {
  limits: Limits
  saving: boolean
  /** A refused save that belongs to no one field (shown under the button). */
  error: ShownError | null
  /** What is wrong with each field, shown under it. */
  fieldErrors: LimitErrors
  /** This computer's CPU as detected (null until the Computer view has loaded). */
  cores: { physical: number; logical: number } | null
  onSave(form: LimitsForm): void
}

export function LimitsSection({ limits, saving, error, fieldErrors, cores, onSave }: LimitsSectionProps) {
  const [form, setForm] = useState(() => limitsToForm(limits))
  const field = (key: LimitField, label: string, testId: string, placeholder: string, unit: string) => {
    const problem = fieldErrors[key]
    return (
      <label className="limit-field">
        <span className="field-label">{label}</span>
        <span className="unit-input">
          <input
            className="input"
            inputMode="decimal"
            value={form[key]}
            placeholder={placeholder}
            onChange={(event) => setForm({ ...form, [key]: event.target.value })}
            aria-invalid={problem !== undefined}
            aria-describedby={problem === undefined ? undefined : `${testId}-error`}
            data-testid={testId}
          />
          <span className="unit">{unit}</span>
        </span>
        {problem !== undefined && (
          <span className="field-error" id={`${testId}-error`} role="alert" data-testid={`${testId}-error`}>
            {problem}
          </span>
        )}
      </label>
    )
  }
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
          {field('threads', 'Threads', 'settings-limit-threads', String(cores?.physical ?? limits.threads), 'threads')}
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
          {cores !== null &&
            ` This computer has ${cores.physical} physical ${cores.physical === 1 ? 'core' : 'cores'} ` +
              `(${cores.logical} threads).`}
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
