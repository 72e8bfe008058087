import type { ModelSummary } from '../../../protocol/swarm'
import { CoverageBar } from '../../components/CoverageBar'
import { formatBytes } from '../../format'
import { missingBlocks } from '../../stores/swarm/selectors'
import { layerCount } from '../../words'

interface ModelListProps {
  models: ModelSummary[]
  selectedModelId: string | null
  onSelect(modelId: string): void
}

export function ModelList({ models, selectedModelId, onSelect }: ModelListProps) {
  if (models.length === 0)
    return (
      <p className="muted empty">The tracker lists no models yet. Add a GGUF file below to publish the first one.</p>
    )
  return (
    <ul className="model-list">
      {models.map((model) => {
        const missing = missingBlocks(model.coverage)
        return (
          <li key={model.modelId}>
            <button
              type="button"
              className={`model-option ${model.modelId === selectedModelId ? 'selected' : ''}`}
              onClick={() => onSelect(model.modelId)}
              data-testid={`model-option-${model.modelId}`}
              aria-pressed={model.modelId === selectedModelId}
            >
              <div className="model-option-head">
                <span className="model-name">{model.name}</span>
                <span className="muted small">{formatBytes(model.bytes)}</span>
              </div>
              <div className="muted small mono">
                {model.modelId} · {layerCount(model.nLayer)} · {model.architecture}
              </div>
              <CoverageBar cells={model.coverage.map((before) => ({ before }))} compact />
              <div className={`small ${missing > 0 ? 'warn-text' : 'good-text'}`}>
                {missing > 0 ? `${missing} of ${model.nLayer} layers have no host` : 'every layer is served'}
              </div>
            </button>
          </li>
        )
      })}
    </ul>
  )
}
