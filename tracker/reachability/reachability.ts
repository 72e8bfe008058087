import { verifySignature } from '../../identity/keys'
import { certificateMessage, MAX_CANDIDATES, type ServingState } from '../../protocol'
import { byReach, mayDial, plainAddress } from './address-scope'
import { proveEndpoint } from './dial-back'

export interface ReachabilityOptions {
  /** The tracker's key, named in every dial-back. */
  readonly trackerKey: string
  /** How long one candidate has to answer (default 3 s). */
  readonly dialTimeoutMs?: number
  /** A proven endpoint is trusted this long before it is dialed again for the same candidates (default 10 min). */
  readonly reuseMs?: number
  readonly log?: (line: string) => void
}

interface Proven {
  readonly key: string
  readonly endpoint: string | null
  readonly at: number
}

/** A host's state the tracker is about to keep, and who it is. */
export interface HostAt {
  readonly hostId: string
  readonly publicKey: string
  /** The address the tracker sees its connection come from (as STUN reports it). */
  readonly observed: string
}

/**
 * Which of a host's candidate endpoints the swarm can reach: the tracker dials each one back (tracker/reachability/
 * dial-back.ts) and keeps the best that proved the host's key; a host none of whose candidates answers is relayed.
 * Dial-backs are bounded: MAX_CANDIDATES per state, one round
 * per host at a time, reused while its candidates stay the same.
 */
export class Reachability {
  private readonly proven = new Map<string, Proven>()
  private readonly dialing = new Map<string, { key: string; done: Promise<string | null> }>()

  constructor(private readonly options: ReachabilityOptions) {}

  /**
   * `state` as the tracker keeps it: its endpoint the one a dial-back proved (null: through the relay), its certificate
   * only when the host's key signed it. States without a listener keep what they say until they serve.
   */
  async prove(host: HostAt, state: ServingState): Promise<ServingState> {
    const fingerprint = this.signedFingerprint(host, state)
    const { tls, ...rest } = state
    const kept = fingerprint === undefined ? rest : { ...rest, tls }
    if (state.status !== 'ready' && state.status !== 'draining') return kept
    return { ...kept, endpoint: await this.endpointFor(host, state, fingerprint) }
  }

  private async endpointFor(
    host: HostAt,
    state: ServingState,
    fingerprint: string | undefined,
  ): Promise<string | null> {
    const candidates = this.candidates(host, state)
    // the offer as the host ordered it: a host moves an endpoint its router just opened (an IPv6 pinhole, which adds
    // no new address) to the front, and is dialed again
    const key = JSON.stringify([host.observed, fingerprint, state.endpoint, state.candidates, candidates])
    const known = this.proven.get(host.hostId)
    if (known?.key === key && Date.now() - known.at < (this.options.reuseMs ?? 600_000)) return known.endpoint
    const running = this.dialing.get(host.hostId)
    if (running?.key === key) return running.done
    const done = this.dial(host, candidates, fingerprint).then((endpoint) => {
      this.proven.set(host.hostId, { key, endpoint, at: Date.now() })
      return endpoint
    })
    this.dialing.set(host.hostId, { key, done })
    try {
      return await done
    } finally {
      if (this.dialing.get(host.hostId)?.done === done) this.dialing.delete(host.hostId)
    }
  }

  /** A host that left: its candidates are dialed afresh when it comes back (another network, another address). */
  forget(hostId: string): void {
    this.proven.delete(hostId)
  }

  /** The certificate fingerprint, only when the host's own key signed it (a wss:// endpoint is pinned to it). */
  private signedFingerprint(host: HostAt, state: ServingState): string | undefined {
    const tls = state.tls
    if (tls === undefined) return undefined
    if (verifySignature(host.publicKey, certificateMessage(tls.fingerprint), tls.signature)) return tls.fingerprint
    this.options.log?.(
      `host ${host.hostId}: its certificate fingerprint is not signed by its key; its wss:// endpoints are not dialed`,
    )
    return undefined
  }

  /**
   * What to dial: the host's candidates and named endpoint, plus its
   * port at the address the tracker sees; only those it may dial.
   */
  private candidates(host: HostAt, state: ServingState): string[] {
    const offered = [...(state.endpoint === null ? [] : [state.endpoint]), ...(state.candidates ?? [])]
    const observed = plainAddress(host.observed)
    const seen = new Set<string>()
    for (const c of offered) {
      let url: URL
      try {
        url = new URL(c)
      } catch {
        continue
      }
      seen.add(url.href)
      // as STUN does: the port the host listens on, at the address its
      // router shows the tracker (a forwarded port, a full-cone NAT)
      const atObserved = new URL(url.href)
      atObserved.hostname = observed.includes(':') ? `[${observed}]` : observed
      seen.add(atObserved.href)
    }
    return [...seen]
      .filter((c) => mayDial(new URL(c).hostname, observed))
      .sort((a, b) => byReach(new URL(a).hostname, new URL(b).hostname))
      .slice(0, MAX_CANDIDATES + 1)
  }

  private async dial(host: HostAt, candidates: string[], fingerprint: string | undefined): Promise<string | null> {
    const target = {
      publicKey: host.publicKey,
      trackerKey: this.options.trackerKey,
      timeoutMs: this.options.dialTimeoutMs ?? 3_000,
      ...(fingerprint === undefined ? {} : { fingerprint }),
    }
    const answers = await Promise.all(candidates.map((c) => proveEndpoint(c, target)))
    const endpoint = candidates.find((_, i) => answers[i]) ?? null
    this.options.log?.(
      endpoint === null
        ? `host ${host.hostId} (seen at ${plainAddress(host.observed)}) answered at none of ${candidates.length} ` +
            `candidate endpoints: it is served through the relay`
        : `host ${host.hostId} proved its key at ${endpoint} (dialed back ${candidates.length}, ` +
            `${answers.filter(Boolean).length} answered)`,
    )
    return endpoint
  }
}
