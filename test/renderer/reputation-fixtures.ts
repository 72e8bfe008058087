import type { ReputationView } from '../../protocol/app'
import type { HostChecksView } from '../../protocol/checks'

/** A host past probation, every check passed, as fast as it claims. */
export const passedChecks: HostChecksView = {
  probesPassed: 12,
  probesFailed: 0,
  auditsPassed: 30,
  auditsFailed: 0,
  probation: false,
  probationLeft: 0,
  ban: null,
  measuredMsPerBlock: 4.2,
  advertisedMsPerBlock: 4,
  speedMarked: false,
  lastProbeAt: 1_700_000_000_000,
}

/** A new key: two probes passed, three to go. */
export const probationChecks: HostChecksView = {
  ...passedChecks,
  probesPassed: 2,
  auditsPassed: 0,
  probation: true,
  probationLeft: 3,
}

/** Banned for a wrong answer, and it claims to be ten times faster than measured. */
export const bannedChecks: HostChecksView = {
  ...passedChecks,
  probesPassed: 4,
  probesFailed: 1,
  ban: { reason: 'failed a known-answer probe on blocks [0, 3) (answer off by 87 %)', at: 1_700_000_360_000 },
  measuredMsPerBlock: 40,
  advertisedMsPerBlock: 4,
  speedMarked: true,
}

export const someReputation: ReputationView = {
  hostId: '0123456789abcdef0123',
  score: 0.874,
  components: { uptime: 0.99, completion: 0.95, latency: 0.6, audits: 1 },
  completedSteps: 190,
  failedSteps: 10,
  history: [
    { at: 20, score: 0.874 },
    { at: 10, score: 0.8 },
  ],
  checks: passedChecks,
}

export const reputationWith = (checks: HostChecksView | null): ReputationView => ({ ...someReputation, checks })
