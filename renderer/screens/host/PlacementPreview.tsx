import { Check } from 'lucide-react'
import type { HostingPreview } from '../../../protocol/app'
import type { BlockRange } from '../../../protocol/blocks'
import { CoverageBar } from '../../components/CoverageBar'
import { Stat } from '../../components/Stat'
import { formatBytes, formatTokensPerSecond } from '../../format'
import {
  cacheFigures,
  chosenOption,
  creditsPerHour,
  downloadFigure,
  placementCells,
  routeFigures,
  sameRange,
} from '../../stores/hosting/selectors'
import { layerRange, plainRanges } from '../../words'

interface PlacementPreviewProps {
  preview: HostingPreview
  chosen: BlockRange | null
  acting: boolean
  /** The app and its tracker answer: a start can go through. */
  reachable: boolean
  onChoose(blocks: BlockRange): void
  onConfirm(): void
}

export function PlacementPreview({ preview, chosen, acting, reachable, onChoose, onConfirm }: PlacementPreviewProps) {
  const { placement } = preview
  const total = placement.coverage.length
  const option = chosenOption(preview, chosen)
  const credits = creditsPerHour(preview, option)
  const cache = option === null ? null : cacheFigures(option)
  const download = option === null ? null : downloadFigure(preview, option)
  const route = option === null ? null : routeFigures(preview, option)
  const isProposal =
    option !== null && placement.proposal !== null && sameRange(option.blocks, placement.proposal.blocks)
  return (
    <div className="placement">
      <div className="placement-legend">
        <span>Swarm coverage today, one cell per layer</span>
        <span className="legend">
          <i className="swatch empty" /> no host <i className="swatch full" /> more hosts{' '}
          <i className="swatch proposed" /> this computer
        </span>
      </div>
      <CoverageBar
        cells={placementCells(preview, option?.blocks ?? null)}
        testId="placement-bar"
        cellTestId="placement-block"
      />
      {option === null ? (
        <div className="refusal" data-testid="preview-refusal">
          {plainRanges(placement.refusal?.reason ?? 'The tracker has no placement for this computer on this model.')}
        </div>
      ) : (
        <>
          <p className="placement-range">
            {isProposal ? 'Proposed' : 'Chosen'}: <strong>{layerRange(option.blocks, total)}</strong>
          </p>
          <div className="stat-grid">
            {download !== null && (
              <Stat label={download.label} value={download.value} hint={download.hint} testId="preview-download" />
            )}
            <Stat label="Memory needed" value={formatBytes(option.memoryBytes)} testId="preview-memory" />
            {cache !== null && (
              <Stat
                label="KV cache per layer"
                value={cache.perTokenPerBlock}
                hint={cache.reserved}
                testId="preview-cache"
              />
            )}
            {route !== null && route.hostsPerRoute !== null && (
              <Stat
                label="Hosts per route"
                value={route.hostsPerRoute}
                hint="computers like this one, end to end"
                testId="preview-hosts-per-route"
              />
            )}
            {route !== null && route.seam !== null && (
              <Stat
                label="Between hosts"
                value={route.seam}
                hint="into and out of this range, f16"
                testId="preview-seam"
              />
            )}
            {route !== null && route.longContext !== null && (
              <Stat
                label={route.longContext.label}
                value={route.longContext.perToken}
                hint={route.longContext.session}
                testId="preview-long-context"
              />
            )}
            <Stat
              label="Expected speed"
              value={formatTokensPerSecond(option.expectedTokensPerSecond)}
              hint={
                `swarm's weakest layer after: ${formatTokensPerSecond(option.swarmTokensPerSecond)} (today ` +
                `${formatTokensPerSecond(placement.swarmTokensPerSecond)})`
              }
              testId="preview-tokens-per-second"
            />
            <Stat
              label="Credits per hour"
              value={
                credits === null
                  ? '—'
                  : `${credits.estimated ? '≈ ' : ''}${credits.credits.toFixed(credits.credits < 1 ? 4 : 2)}`
              }
              hint="at full load"
              testId="preview-credits-per-hour"
            />
          </div>
        </>
      )}
      {placement.alternatives.length > 0 && (
        <div className="alternatives">
          <div className="field-label">Other ranges</div>
          {placement.proposal !== null && (
            <button
              type="button"
              className={`alternative ${isProposal ? 'selected' : ''}`}
              onClick={() => placement.proposal && onChoose(placement.proposal.blocks)}
              data-testid="preview-proposal"
            >
              <span>{layerRange(placement.proposal.blocks, total)}</span>
              <span className="muted">the tracker's proposal</span>
            </button>
          )}
          {placement.alternatives.map((alt) => (
            <button
              type="button"
              key={alt.blocks.join('-')}
              className={`alternative ${option !== null && sameRange(option.blocks, alt.blocks) ? 'selected' : ''}`}
              onClick={() => onChoose(alt.blocks)}
              data-testid="preview-alternative"
            >
              <span>{layerRange(alt.blocks, total)}</span>
              <span className="muted">{plainRanges(alt.why)}</span>
              <span className="small muted">{formatTokensPerSecond(alt.expectedTokensPerSecond)}</span>
            </button>
          ))}
        </div>
      )}
      {option !== null && (
        <div className="confirm-row">
          <button
            type="button"
            className="button primary"
            onClick={onConfirm}
            disabled={acting || !reachable}
            data-testid="hosting-confirm"
          >
            <Check size={16} aria-hidden /> {acting ? 'Starting…' : `Host ${layerRange(option.blocks, total)}`}
          </button>
        </div>
      )}
    </div>
  )
}
