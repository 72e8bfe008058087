import type { ReputationView } from '../../../protocol/app'
import type { HostChecksView } from '../../../protocol/checks'
import { formatHour, formatNumber } from '../../format'
import { plainRanges } from '../../words'

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
  latency: ['Latency', 'how its time per layer compares with the swarm'],
  audits: ['Audits', 'share of its checked steps that another host reproduced'],
}
const NO_AUDITS_HINT = 'this tracker does not audit hosts yet: neutral'

export function componentBars(view: ReputationView): ComponentBar[] {
  return (Object.keys(LABELS) as ComponentKey[]).map((key) => ({
    key,
    label: LABELS[key][0],
    hint: key === 'audits' && view.checks === null ? NO_AUDITS_HINT : LABELS[key][1],
    value: view.components[key],
  }))
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

/** No step served and no score recorded: the tracker's number is only its starting point, not a record. */
export function hasRecord(view: ReputationView): boolean {
  return view.completedSteps + view.failedSteps > 0 || view.history.length > 0
}

/**
 * The score as the panel heads it: "No record yet" before the host has served (a prior or a probation cap
 * would read as a verdict that its components, all at their neutral 100 %, contradict), the percentage after.
 */
export function scoreHeadline(view: ReputationView): { value: string; grade: string; recorded: boolean } {
  if (!hasRecord(view))
    return { value: 'No record yet', grade: 'the tracker scores this host once it serves others', recorded: false }
  const capped = view.checks?.probation === true && view.checks.ban === null ? ' · capped under 50% on probation' : ''
  return { value: scorePercent(view.score), grade: `${scoreGrade(view.score)}${capped}`, recorded: true }
}

export function successRate(view: ReputationView): string {
  const total = view.completedSteps + view.failedSteps
  return total === 0
    ? 'no steps yet'
    : `${((view.completedSteps / total) * 100).toFixed(1)}% of ${formatNumber(total)} steps`
}

export function historySeries(view: ReputationView): { at: number; score: number }[] {
  return [...view.history]
    .sort((a, b) => a.at - b.at)
    .map((p) => ({ at: p.at, score: Math.round(p.score * 1000) / 10 }))
}

/** The score history in words, for screen readers: where it started and ended, and its lowest point. */
export function historyDescription(view: ReputationView): string {
  const points = historySeries(view)
  const first = points[0]
  const last = points[points.length - 1]
  if (first === undefined || last === undefined) return 'No history yet.'
  const lowest = points.reduce((a, b) => (b.score < a.score ? b : a))
  return (
    `Score from ${first.score}% on ${formatHour(first.at)} to ${last.score}% on ${formatHour(last.at)}, over ` +
    `${points.length} points; lowest ${lowest.score}% on ${formatHour(lowest.at)}.`
  )
}

/**
 * Where the tracker's checks leave this host, most serious first: banned,
 * on probation, checked, or an older tracker that does not check.
 */
export interface Standing {
  kind: 'banned' | 'probation' | 'trusted' | 'unchecked'
  /** A short badge. */
  label: string
  /** What it means for the volunteer, in a sentence. */
  detail: string
}

export function standing(checks: HostChecksView | null): Standing {
  if (checks === null)
    return { kind: 'unchecked', label: 'Not checked', detail: 'This tracker does not check hosts yet.' }
  if (checks.ban !== null)
    return { kind: 'banned', label: 'Banned', detail: 'The tracker sends this host no more work, so it earns nothing.' }
  if (checks.probation) {
    const left = checks.probationLeft
    return {
      kind: 'probation',
      label: left === 0 ? 'On probation: finishing' : `On probation: ${plural(left, 'probe')} to go`,
      detail:
        `A new host is routed last and checked more often until it has passed ` +
        `${plural(left, 'more known-answer probe')}.`,
    }
  }
  return { kind: 'trusted', label: 'Passed probation', detail: 'The tracker keeps probing every host now and then.' }
}

/** The ban in words, the tracker's own reason first: "Banned: failed a known-answer probe on layers 1–3 (…)". */
export function banNotice(checks: HostChecksView | null): { title: string; since: string; advice: string } | null {
  if (checks?.ban == null) return null
  return {
    title: `Banned: ${plainRanges(checks.ban.reason)}`,
    since: `since ${formatHour(checks.ban.at)}`,
    advice:
      'A host that does not cheat can still answer wrong, from faulty memory, a GPU driver bug or a damaged model ' +
      "file. Fix that, then ask the tracker's operator to review the ban.",
  }
}

export interface CheckTally {
  key: 'probes' | 'audits'
  label: string
  hint: string
  passed: number
  failed: number
  /** "12 passed · 1 failed". */
  text: string
  tone: 'good' | 'bad' | 'neutral'
}

export function checkTallies(checks: HostChecksView): CheckTally[] {
  const tally = (key: CheckTally['key'], label: string, hint: string, passed: number, failed: number): CheckTally => ({
    key,
    label,
    hint,
    passed,
    failed,
    text: `${formatNumber(passed)} passed · ${formatNumber(failed)} failed`,
    tone: failed > 0 ? 'bad' : passed > 0 ? 'good' : 'neutral',
  })
  return [
    tally(
      'probes',
      'Known-answer probes',
      'test inputs the tracker already knows the answer to',
      checks.probesPassed,
      checks.probesFailed,
    ),
    tally(
      'audits',
      'Audits',
      'real steps re-run on another host and compared',
      checks.auditsPassed,
      checks.auditsFailed,
    ),
  ]
}

export function lastProbe(checks: HostChecksView): string {
  return checks.lastProbeAt === null ? 'no probe yet' : formatHour(checks.lastProbeAt)
}

/** Time per layer (a block), ms: whole milliseconds from 10 up, one decimal below. */
export function formatMsPerBlock(ms: number | null): string {
  if (ms === null) return 'not known yet'
  return `${ms >= 10 ? ms.toFixed(0) : ms.toFixed(1)} ms per layer`
}

/** The speed the tracker measured beside the one the host claims, with a warning when the claim is far off. */
export function speedCheck(checks: HostChecksView): { measured: string; claimed: string; warning: string | null } {
  const { measuredMsPerBlock: measured, advertisedMsPerBlock: claimed } = checks
  let warning: string | null = null
  if (checks.speedMarked) {
    const times =
      measured !== null && claimed !== null && claimed > 0 ? ` (${formatRatio(measured / claimed)} slower)` : ''
    warning =
      `This host claims to be much faster than the tracker measured${times}. Routing uses the measured speed, not ` +
      `the claim; ` +
      'a computer busy with other programs measures slower.'
  }
  return { measured: formatMsPerBlock(measured), claimed: formatMsPerBlock(claimed), warning }
}

function formatRatio(ratio: number): string {
  return `${ratio >= 10 ? ratio.toFixed(0) : ratio.toFixed(1)}×`
}

function plural(n: number, noun: string): string {
  return `${formatNumber(n)} ${noun}${n === 1 ? '' : 's'}`
}
