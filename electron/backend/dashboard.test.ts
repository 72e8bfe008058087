import { describe, expect, it } from 'vitest'
import { ReputationView } from '../../protocol/app'
import { NeuronError } from '../../protocol/errors'
import { bannedChecks } from '../../test/renderer/reputation-fixtures'
import { parseHostDashboard, toReputation } from './dashboard'

const URL = 'http://127.0.0.1:7070/v1/dashboard/hosts/0123456789abcdef0123'
/** A host dashboard as a tracker from before the checks answers it. */
const older = {
  host_id: '0123456789abcdef0123',
  balance_micro: 0,
  served_block_tokens: 0,
  earnings_by_hour: [],
  earnings_by_day: [],
  recent_receipts: [],
  reputation: {
    score: 0.5,
    components: { uptime: 1, completion: 1, latency: 0.5, audits: 0.5 },
    completedSteps: 0,
    failedSteps: 0,
  },
  reputation_history: [{ at: 2, score: 0.5 }],
}

describe('the host dashboard', () => {
  it("carries the tracker's checks into the reputation the screen shows", () => {
    const view = toReputation(older.host_id, parseHostDashboard(URL, { ...older, checks: bannedChecks }))
    expect(ReputationView.parse(view).checks).toEqual(bannedChecks)
  })

  it('reads an older tracker without checks, or with null, as no checks', () => {
    expect(toReputation(older.host_id, parseHostDashboard(URL, older)).checks).toBeNull()
    expect(toReputation(older.host_id, parseHostDashboard(URL, { ...older, checks: null })).checks).toBeNull()
  })

  it('refuses malformed checks with a bad_response that names the field', () => {
    const parse = () => parseHostDashboard(URL, { ...older, checks: { ...bannedChecks, probesFailed: -1 } })
    expect(parse).toThrow(NeuronError)
    expect(parse).toThrow(/checks\.probesFailed/)
    try {
      parse()
    } catch (error) {
      expect((error as NeuronError).code).toBe('bad_response')
    }
  })
})
