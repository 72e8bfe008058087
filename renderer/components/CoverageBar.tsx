import type { CSSProperties } from 'react'
import { coverageIntensity } from '../stores/hosting/selectors'

export interface CoverageCell {
  before: number
  proposed?: boolean
}

interface CoverageBarProps {
  cells: CoverageCell[]
  testId?: string
  /** When set, each cell gets data-testid `${cellTestId}-${i}`. */
  cellTestId?: string
  compact?: boolean
}

/** One cell per block: colour strength is how many hosts serve it, an outline marks the proposed range. */
export function CoverageBar({ cells, testId, cellTestId, compact }: CoverageBarProps) {
  const max = Math.max(1, ...cells.map((c) => c.before))
  return (
    <div
      className={`coverage-bar ${compact === true ? 'compact' : ''}`}
      data-testid={testId}
      role="img"
      aria-label={`${cells.length} blocks`}
    >
      {cells.map((cell, i) => (
        <div
          // biome-ignore lint/suspicious/noArrayIndexKey: a block's index is its identity
          key={i}
          className={`coverage-cell ${cell.before === 0 ? 'empty' : ''} ${cell.proposed === true ? 'proposed' : ''}`}
          style={{ '--intensity': coverageIntensity(cell.before, max) } as CSSProperties}
          data-testid={cellTestId === undefined ? undefined : `${cellTestId}-${i}`}
          data-before={cell.before}
          data-proposed={cell.proposed === true ? 'true' : 'false'}
          title={
            `block ${i}: ${cell.before} ` +
            `host${cell.before === 1 ? '' : 's'}${cell.proposed === true ? ' · proposed for this computer' : ''}`
          }
        />
      ))}
    </div>
  )
}
