import type { ReputationView } from '../../../protocol/app'
import { formatNumber } from '../../format'

export type ComponentKey = keyof ReputationView['components']

export interface ComponentBar {
  key: ComponentKey
  label: string
  hint: string
  value: number
}

const LABELS: Record<ComponentKey, [string, string]> = {
  uptime: ['Uptime', 'share of the time this host answered heartbeats'],
  completion: ['Completion', 'success rate of the steps it was given'],
  latency: ['Latency', 'how its time per block compares with the swarm'],
  audits: ['Audits', 'steps re-run on another host that matched (trackers do not audit yet: neutral)'],
}

export function componentBars(view: ReputationView): ComponentBar[] {
  return (Object.keys(LABELS) as ComponentKey[]).map((key) => ({ key, label: LABELS[key][0], hint: LABELS[key][1], value: view.components[key] }))
}

export function scorePercent(score: number): string {
  return `${Math.round(score * 100)}%`
}

/** A word for the score, so a number alone does not have to carry the meaning. */
export function scoreGrade(score: number): string {
  if (score >= 0.9) return 'Excellent'
  if (score >= 0.75) return 'Good'
  if (score >= 0.5) return 'Fair'
  return 'Needs attention'
}

export function successRate(view: ReputationView): string {
  const total = view.completedSteps + view.failedSteps
  return total === 0 ? 'no steps yet' : `${((view.completedSteps / total) * 100).toFixed(1)}% of ${formatNumber(total)} steps`
}

export function historySeries(view: ReputationView): { at: number; score: number }[] {
  return [...view.history].sort((a, b) => a.at - b.at).map((p) => ({ at: p.at, score: Math.round(p.score * 1000) / 10 }))
}
