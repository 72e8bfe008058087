import { createElement } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import { ReputationView } from '../../../protocol/app'
import type { HostChecksView } from '../../../protocol/checks'
import { bannedChecks, passedChecks, probationChecks, reputationWith } from '../../../test/renderer/reputation-fixtures'
import { ReputationReport } from './ReputationReport'

/** The Reputation screen's body as the volunteer reads it: the markup, and its text without tags. */
function render(checks: HostChecksView | null): { html: string; text: string } {
  // Through the contract first, as the bridge does: the fixture is what a backend may send.
  const view = ReputationView.parse(reputationWith(checks))
  const html = renderToStaticMarkup(createElement(ReputationReport, { view }))
  return { html, text: html.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ') }
}

describe('the Reputation screen', () => {
  it("shows a banned host its ban and the tracker's reason above everything else", () => {
    const { html, text } = render(bannedChecks)
    expect(text).toContain('Banned: failed a known-answer probe on layers 1–3 (answer off by 87 %)')
    expect(html.indexOf('data-testid="reputation-ban"')).toBeGreaterThanOrEqual(0)
    expect(html.indexOf('role="alert"')).toBeLessThan(html.indexOf('data-testid="reputation-score"'))
    expect(html).toContain('data-standing="banned"')
    expect(text).toContain('4 passed · 1 failed')
    expect(html).toContain('data-testid="reputation-speed-warning"')
    expect(text).toContain('40 ms per layer')
  })

  it('shows a host on probation its badge with the probes it has to go, and no ban', () => {
    const { html, text } = render(probationChecks)
    expect(html).toContain('data-standing="probation"')
    expect(text).toContain('On probation: 3 probes to go')
    expect(html).not.toContain('data-testid="reputation-ban"')
    expect(html).not.toContain('data-testid="reputation-speed-warning"')
  })

  it('shows a checked host its tallies and speeds without alarms', () => {
    const { html, text } = render(passedChecks)
    expect(html).toContain('data-standing="trusted"')
    expect(text).toContain('12 passed · 0 failed')
    expect(text).toContain('4.2 ms per layer')
    expect(html).not.toContain('role="alert"')
  })

  it('says an older tracker does not check hosts, instead of showing zero checks', () => {
    const { html, text } = render(null)
    expect(html).toContain('data-standing="unchecked"')
    expect(text).toContain('This tracker does not check hosts yet.')
    expect(text).not.toContain('passed ·')
  })
})
