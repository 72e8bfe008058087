import type { ApiAccessView } from '../../../protocol/app'
import { CopyButton } from '../../components/CopyButton'
import { Panel } from '../../components/Panel'
import { apiExamples } from '../../stores/api/selectors'

interface ApiExamplesProps {
  view: ApiAccessView
  model: string
  onModel(model: string): void
  /** The full key while it is on screen; null: the examples read it from NEURON_KEY. */
  apiKey: string | null
}

/** A chat completion to paste: curl and the openai clients, filled with the endpoint, the model and the key. */
export function ApiExamples({ view, model, onModel, apiKey }: ApiExamplesProps) {
  const picker =
    view.modelIds.length > 1 ? (
      <select
        className="input"
        value={model}
        onChange={(e) => onModel(e.target.value)}
        aria-label="Model for the examples"
        data-testid="api-model"
      >
        {view.modelIds.map((id) => (
          <option key={id} value={id}>
            {id}
          </option>
        ))}
      </select>
    ) : undefined
  return (
    <Panel title="Examples" actions={picker} testId="api-examples">
      {view.modelIds.length === 0 && (
        <p className="muted">No model is published on this swarm yet; the examples name MODEL_ID until one is.</p>
      )}
      {apiKey === null && (
        <p className="muted">
          The examples read the key from <span className="mono">NEURON_KEY</span>; set it to your key first.
        </p>
      )}
      {apiExamples(view, model, apiKey).map((example) => (
        <div key={example.id} className="example">
          <div className="example-header">
            <span className="field-label">{example.label}</span>
            <CopyButton
              text={example.code}
              label={`Copy the ${example.label} example`}
              testId={`api-example-${example.id}-copy`}
            />
          </div>
          <pre className="example-code mono" data-testid={`api-example-${example.id}`}>
            {example.code}
          </pre>
        </div>
      ))}
    </Panel>
  )
}
