// What the tracker's host checks can be tuned with, and what they tell their listeners.

export interface ChecksOptions {
  /** Known-answer probes a new key must pass before it leaves probation (default 3). */
  readonly probationProbes?: number
  /** Mean time between probes of a host on probation, ms (default 30 s). */
  readonly probationProbeEveryMs?: number
  /** Mean time between probes of an established host, ms (default 10 min); each wait is drawn at random. */
  readonly probeEveryMs?: number
  /**
   * The chance that a client has each hop's session audited once it is over, every step of it re-run on another host
   * as one prefill (default 0.25, or $NEURON_AUDIT_RATE).
   */
  readonly auditRate?: number
  /** The same for a host on probation (default 1: every session). */
  readonly probationAuditRate?: number
  /** A host that claims to be this many times faster than the probes measure is marked (default 4). */
  readonly speedClaimFactor?: number
  /** Audits one client key may ask for a minute (default 600): each costs other hosts a re-run. */
  readonly auditsPerMinute?: number
  /**
   * An audit no other host can re-run (the last hop's; or blocks only this host serves, when it cannot re-run
   * them itself) is decided by a known-answer probe of the host, unless it passed one for what it serves within this
   * many ms (default 30 s): the probe says nothing of the audited step itself, and the chat waits for it.
   */
  readonly auditProbeReuseMs?: number
}

export interface HostChecksEvents {
  /** A host lied: it is banned; its pending earnings are voided. */
  banned: [hostId: string, reason: string]
  /** A host passed a probe for what it serves now: it may be routed. */
  verified: [hostId: string]
}

/** The options with their defaults filled in; the audit rate may come from $NEURON_AUDIT_RATE. */
export function checksOptionsWithDefaults(
  options: ChecksOptions,
  env: NodeJS.ProcessEnv,
): Required<ChecksOptions> & { auditRate: number } {
  const envRate = Number(env.NEURON_AUDIT_RATE)
  return {
    probationProbes: options.probationProbes ?? 3,
    probationProbeEveryMs: options.probationProbeEveryMs ?? 30_000,
    probeEveryMs: options.probeEveryMs ?? 600_000,
    auditRate:
      options.auditRate ?? (env.NEURON_AUDIT_RATE !== undefined && envRate >= 0 && envRate <= 1 ? envRate : 0.25),
    probationAuditRate: options.probationAuditRate ?? 1,
    speedClaimFactor: options.speedClaimFactor ?? 4,
    auditsPerMinute: options.auditsPerMinute ?? 600,
    auditProbeReuseMs: options.auditProbeReuseMs ?? 30_000,
  }
}
