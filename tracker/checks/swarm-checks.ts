import type { TrustedCa } from '../../dataplane/tls-trust'
import type { NodeIdentity } from '../../identity/keys'
import type { Manifest, ProbeSet, RpcSocket } from '../../protocol'
import type { TrackerStore } from '../db/store'
import type { HostRegistry } from '../hosts/registry'
import { Auditor } from './auditor'
import { type ChecksOptions, HostChecks } from './host-checks'
import { linkToHost } from './host-links'
import type { OwnReruns } from './own-reruns'
import { Prober } from './prober'

export interface SwarmChecksDeps {
  readonly store: TrackerStore
  readonly registry: HostRegistry
  readonly manifest: (modelId: string) => Manifest
  readonly price: (modelId: string) => { promptMicroPerToken: number; completionMicroPerToken: number }
  readonly probes: (modelId: string) => ProbeSet | undefined
  /** The tracker's key (signs the checks' tickets) and the gateway's (opens their sessions, like paying traffic). */
  readonly tracker: NodeIdentity
  readonly client: NodeIdentity
  readonly hostSocket: (hostId: string) => RpcSocket | undefined
  readonly ca: TrustedCa | undefined
  readonly publicKeyOf: (hostId: string) => Promise<string | undefined>
  /** Tells metering a check's session, so the host's receipts for it are verified and paid nothing. */
  readonly issue: (
    session: string,
    modelId: string,
    hops: { hostId: string; blocks: readonly [number, number] }[],
    routed: { maxTokens: number; promptTokens: number },
  ) => Promise<unknown>
  readonly options?: ChecksOptions
  /** Spans the tracker re-runs itself (own-reruns.ts), under its own id (`tracker.id`). */
  readonly own?: OwnReruns
  readonly log: (line: string) => void
}

/** How long a model's missing probe set is remembered: a publisher may still send one. */
const NO_PROBES_TTL_MS = 5_000

/** The tracker's checks of hosts, wired: probes, audits, probation and bans (see HostChecks). */
export function createSwarmChecks(deps: SwarmChecksDeps): { checks: HostChecks; auditor: Auditor; prober: Prober } {
  const sets = new Map<string, { set: ProbeSet | undefined; at: number }>()
  const probes = (modelId: string) => {
    const known = sets.get(modelId)
    if (known !== undefined && (known.set !== undefined || Date.now() - known.at < NO_PROBES_TTL_MS)) return known.set
    const set = deps.probes(modelId)
    sets.set(modelId, { set, at: Date.now() })
    return set
  }
  const prober = new Prober({
    manifest: deps.manifest,
    price: deps.price,
    probes,
    tracker: deps.tracker,
    client: deps.client,
    link: (hostId) => {
      const host = deps.registry.get(hostId)
      return linkToHost(
        hostId,
        host?.state.endpoint ?? null,
        deps.hostSocket(hostId),
        deps.client.publicKey,
        deps.ca,
        host?.state.tls?.fingerprint,
      )
    },
    own: (hostId, modelId, blocks) => (hostId === deps.tracker.id ? deps.own?.link(modelId, blocks) : undefined),
    issue: (session, modelId, hop, maxTokens, promptTokens) =>
      deps.issue(session, modelId, [hop], { maxTokens, promptTokens }),
    full: (hostId) => {
      const host = deps.registry.get(hostId)
      return host !== undefined && host.state.activeSessions + host.routedSinceHeartbeat >= host.state.maxSessions
    },
  })
  const checks = new HostChecks(deps.store.checks, deps.registry, prober, deps.options, deps.log)
  const auditor = new Auditor({
    registry: deps.registry,
    checks,
    prober,
    publicKeyOf: deps.publicKeyOf,
    route: (session) => deps.store.ledger.routes.route(session),
    shape: (modelId) => deps.manifest(modelId),
    perMinute: checks.options.auditsPerMinute,
    ...(deps.own === undefined ? {} : { own: { id: deps.tracker.id, reruns: deps.own } }),
    probeReuseMs: checks.options.auditProbeReuseMs,
  })
  return { checks, auditor, prober }
}
