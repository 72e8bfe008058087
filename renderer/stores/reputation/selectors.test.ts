import { describe, expect, it } from 'vitest'
import {
  bannedChecks,
  passedChecks,
  probationChecks,
  reputationWith,
  someReputation as view,
} from '../../../test/renderer/reputation-fixtures'
import { formatHour } from '../../format'
import {
  banNotice,
  checkTallies,
  componentBars,
  formatMsPerBlock,
  hasRecord,
  historyDescription,
  historySeries,
  lastProbe,
  scoreGrade,
  scoreHeadline,
  scorePercent,
  speedCheck,
  standing,
  successRate,
} from './selectors'

describe('reputation selectors', () => {
  it('shows the score as a percentage with a word for it', () => {
    expect(scorePercent(view.score)).toBe('87%')
    expect(scoreGrade(view.score)).toBe('Good')
  })

  it(
    'reads "No record yet" for a host that has served nothing, not a prior or probation cap its components ' +
      'contradict',
    () => {
      const fresh = { ...reputationWith(probationChecks), score: 0.45, completedSteps: 0, failedSteps: 0, history: [] }
      expect(hasRecord(fresh)).toBe(false)
      expect(scoreHeadline(fresh)).toEqual({
        value: 'No record yet',
        grade: 'the tracker scores this host once it serves others',
        recorded: false,
      })
      expect(scoreHeadline({ ...fresh, completedSteps: 3 })).toEqual({
        value: '45%',
        grade: 'Needs attention · capped under 50% on probation',
        recorded: true,
      })
      expect(scoreHeadline(view)).toMatchObject({ value: '87%', grade: 'Good', recorded: true })
    },
  )

  it('lists the four components in a stable order, completion as the success rate', () => {
    expect(componentBars(view).map((b) => [b.key, b.value])).toEqual([
      ['uptime', 0.99],
      ['completion', 0.95],
      ['latency', 0.6],
      ['audits', 1],
    ])
    expect(successRate(view)).toBe('95.0% of 200 steps')
  })

  it('says audits are neutral only on a tracker that does not check hosts', () => {
    const audits = (checks: typeof passedChecks | null) =>
      componentBars(reputationWith(checks)).find((b) => b.key === 'audits')?.hint
    expect(audits(null)).toMatch(/does not audit hosts yet: neutral/)
    expect(audits(passedChecks)).not.toMatch(/neutral/)
  })

  it('charts the history oldest first in percent', () => {
    expect(historySeries(view)).toEqual([
      { at: 10, score: 80 },
      { at: 20, score: 87.4 },
    ])
  })
})

describe('check selectors', () => {
  it('puts a ban before probation, and says how many probes a host on probation has to go', () => {
    expect(standing({ ...bannedChecks, probation: true, probationLeft: 3 })).toMatchObject({
      kind: 'banned',
      label: 'Banned',
    })
    expect(standing(probationChecks)).toMatchObject({ kind: 'probation', label: 'On probation: 3 probes to go' })
    expect(standing(probationChecks).detail).toContain('passed 3 more known-answer probes')
    expect(standing({ ...probationChecks, probationLeft: 1 }).label).toBe('On probation: 1 probe to go')
    expect(standing(passedChecks).kind).toBe('trusted')
    expect(standing(null)).toMatchObject({ kind: 'unchecked', detail: 'This tracker does not check hosts yet.' })
  })

  it("words a ban with the tracker's reason and its date, and nothing when there is none", () => {
    expect(banNotice(bannedChecks)).toEqual({
      title: 'Banned: failed a known-answer probe on layers 1–3 (answer off by 87 %)',
      since: `since ${formatHour(1_700_000_360_000)}`,
      advice: expect.stringContaining("ask the tracker's operator to review the ban"),
    })
    expect(banNotice(passedChecks)).toBeNull()
    expect(banNotice(null)).toBeNull()
  })

  it('counts probes and audits passed and failed, red as soon as one failed', () => {
    expect(checkTallies(bannedChecks).map((t) => [t.key, t.text, t.tone])).toEqual([
      ['probes', '4 passed · 1 failed', 'bad'],
      ['audits', '30 passed · 0 failed', 'good'],
    ])
    expect(checkTallies({ ...probationChecks, probesPassed: 0 }).map((t) => t.tone)).toEqual(['neutral', 'neutral'])
    expect(lastProbe(passedChecks)).toBe(formatHour(1_700_000_000_000))
    expect(lastProbe({ ...passedChecks, lastProbeAt: null })).toBe('no probe yet')
  })

  it('shows measured against claimed speed, and warns how far off a marked claim is', () => {
    expect(speedCheck(passedChecks)).toEqual({
      measured: '4.2 ms per layer',
      claimed: '4.0 ms per layer',
      warning: null,
    })
    const marked = speedCheck(bannedChecks)
    expect(marked.measured).toBe('40 ms per layer')
    expect(marked.warning).toMatch(
      /much faster than the tracker measured \(10× slower\)\. Routing uses the measured speed/,
    )
    expect(speedCheck({ ...bannedChecks, measuredMsPerBlock: null }).warning).not.toContain('×')
    expect(formatMsPerBlock(null)).toBe('not known yet')
  })

  it('describes the score history in words for screen readers', () => {
    expect(historyDescription(view)).toBe(
      `Score from 80% on ${formatHour(10)} to 87.4% on ${formatHour(20)}, over 2 points; lowest 80% on ` +
        `${formatHour(10)}.`,
    )
    expect(historyDescription({ ...view, history: [] })).toBe('No history yet.')
  })
})
