import { EventEmitter } from 'node:events'
import type { HardwareProfile, HostSummary, ServingState } from '../../protocol'

export interface LiveHost {
  readonly hostId: string
  readonly publicKey: string
  profile: HardwareProfile
  state: ServingState
  lastHeartbeat: number
  online: boolean
  /** The tracker instance holding its connection: null for this one (tracker/cluster/). */
  owner: string | null
  /** For a host another instance holds: what that instance's probe verified it serves (null before a pass). */
  verifiedFor: string | null
  /** Sessions routed to it that the count it heartbeats may not hold yet. */
  routedSinceHeartbeat: number
  /** Sessions it holds opened and never stepped, that it gives up to a waiting key when full (its last heartbeat's). */
  idleOpens: number
}

/** Sessions remembered as routed to one host between two of its heartbeats. */
const MAX_COUNTED_SESSIONS = 4096
/**
 * A routed session no heartbeat has listed counts against its host this long at most (two beats where they are faster).
 */
export const ROUTED_GRACE_MS = 5_000

/** A session routed to a host: when, and the client key that planned it (its share of the host, session.end). */
interface Routed {
  readonly at: number
  readonly key: string
}

/** A host as another instance describes the one it holds. */
export type MirroredHost = Pick<LiveHost, 'hostId' | 'publicKey' | 'profile' | 'state' | 'online' | 'verifiedFor'>

/**
 * Who is serving what, right now. Hosts heartbeat every `heartbeatMs`; after three missed
 * heartbeats (or a dropped connection) a host is offline and out of routing at once.
 */
export class HostRegistry extends EventEmitter<{ offline: [hostId: string, why: string]; changed: [hostId: string] }> {
  private readonly hosts = new Map<string, LiveHost>()
  /**
   * Another instance's word that it holds a host this one still has a connection to: the host moved
   * and this connection is half-open. It takes effect when that connection is found dead.
   */
  private readonly claims = new Map<string, { owner: string; host: MirroredHost }>()
  /** Sessions routed to each host, until a heartbeat holds them (routedSinceHeartbeat is their count). */
  private readonly routedSessions = new Map<string, Map<string, Routed>>()
  /** Sessions a host's heartbeats list, with the key that planned them: each key's share of the host. */
  private readonly heldSessions = new Map<string, Map<string, string>>()
  private readonly timer: NodeJS.Timeout

  constructor(readonly heartbeatMs: number) {
    super()
    this.timer = setInterval(() => this.sweep(Date.now()), Math.max(50, Math.floor(heartbeatMs / 2)))
    this.timer.unref()
  }

  hello(hostId: string, publicKey: string, profile: HardwareProfile, state: ServingState, now = Date.now()): LiveHost {
    const host: LiveHost = {
      hostId,
      publicKey,
      profile,
      state,
      lastHeartbeat: now,
      online: true,
      owner: null,
      verifiedFor: null,
      routedSinceHeartbeat: 0,
      idleOpens: 0,
    }
    this.hosts.set(hostId, host)
    this.claims.delete(hostId)
    // a host saying hello again (restarted, reconnected) holds none of the sessions routed to it before
    this.routedSessions.delete(hostId)
    this.heldSessions.delete(hostId)
    this.emit('changed', hostId)
    return host
  }

  /**
   * A host another instance holds, as that instance says it is now. Its heartbeats come in that
   * instance's batches; once they stop (the instance died) the sweep takes it offline like any host.
   */
  mirror(owner: string, h: MirroredHost, now = Date.now()): void {
    const known = this.hosts.get(h.hostId)
    // This instance holds a connection to it: kept until that connection is found dead (markOffline).
    if (known?.owner === null && known.online) {
      if (h.online) this.claims.set(h.hostId, { owner, host: h })
      else if (this.claims.get(h.hostId)?.owner === owner) this.claims.delete(h.hostId)
      return
    }
    if (!h.online && known?.owner !== owner) return
    const wasOnline = known?.online === true
    this.hosts.set(h.hostId, { ...h, lastHeartbeat: now, owner, routedSinceHeartbeat: 0, idleOpens: 0 })
    if (wasOnline && !h.online) this.emit('offline', h.hostId, `offline at instance ${owner}`)
    this.emit('changed', h.hostId)
  }

  /** Hosts this instance holds the connection of. */
  own(): LiveHost[] {
    return [...this.hosts.values()].filter((h) => h.owner === null)
  }

  /**
   * What the host serves now; its count of sessions is its heartbeats'
   * (a state update carries whatever count it was made with).
   */
  updateState(hostId: string, state: ServingState, now = Date.now()): void {
    const host = this.hosts.get(hostId)
    if (host === undefined) return
    host.state = { ...state, activeSessions: host.state.activeSessions }
    host.lastHeartbeat = now
    host.online = true
    this.emit('changed', hostId)
  }

  /**
   * `owner`: the instance whose batch carries it (null: this instance's own host). `seen`: the sessions the host held
   * since its last heartbeat; a routed session stays counted until one lists it (its count then holds it, or it has
   * closed), or for the routed grace (it was never opened). Without `seen` (an older host, another instance's batch),
   * the count holds every session routed before it.
   */
  heartbeat(
    hostId: string,
    activeSessions: number,
    now = Date.now(),
    owner: string | null = null,
    seen?: readonly string[],
    idleOpens = 0,
  ): void {
    const host = this.hosts.get(hostId)
    if (host === undefined || host.owner !== owner) return
    host.lastHeartbeat = now
    host.idleOpens = idleOpens
    host.state = { ...host.state, activeSessions }
    const routed = this.routedSessions.get(hostId)
    const held = this.heldSessions.get(hostId) ?? new Map<string, string>()
    if (seen !== undefined) {
      const listed = new Set(seen)
      for (const session of held.keys()) if (!listed.has(session)) held.delete(session)
      for (const [session, r] of routed ?? []) {
        if (listed.has(session)) held.set(session, r.key)
        if (listed.has(session) || now - r.at >= this.routedGraceMs) routed?.delete(session)
      }
      this.heldSessions.set(hostId, held)
    } else {
      routed?.clear()
      this.heldSessions.delete(hostId)
    }
    host.routedSinceHeartbeat = routed?.size ?? 0
    if (!host.online) {
      host.online = true
      this.emit('changed', hostId)
    }
  }

  /**
   * How long a routed session that no heartbeat lists counts against its host: ROUTED_GRACE_MS, or two beats if sooner.
   */
  get routedGraceMs(): number {
    return Math.min(ROUTED_GRACE_MS, 2 * this.heartbeatMs)
  }

  /**
   * A session was routed to it by `key`: counted as open until a
   * heartbeat holds it (see heartbeat). False if already counted.
   */
  routed(hostId: string, session: string, key = '', now = Date.now()): boolean {
    const host = this.hosts.get(hostId)
    if (host === undefined) return false
    const sessions = this.routedSessions.get(hostId) ?? new Map<string, Routed>()
    // Past a host's most sessions it is full anyway: no need to remember more of them.
    if (sessions.has(session) || sessions.size >= MAX_COUNTED_SESSIONS) return false
    sessions.set(session, { at: now, key })
    this.routedSessions.set(hostId, sessions)
    host.routedSinceHeartbeat = sessions.size
    return true
  }

  /**
   * `key` ended `session` (session.end): it counts against no host from now on, where `key` planned it. Its host's
   * own count holds it until the host closes it; returns whether any count changed.
   */
  ended(session: string, key: string): boolean {
    let changed = false
    for (const [hostId, sessions] of this.routedSessions) {
      if (sessions.get(session)?.key !== key) continue
      sessions.delete(session)
      const host = this.hosts.get(hostId)
      if (host !== undefined) host.routedSinceHeartbeat = sessions.size
      changed = true
    }
    return changed
  }

  /**
   * Sessions each client key holds at a host, routed or listed
   * by its heartbeats (those the tracker did not route aside).
   */
  holders(hostId: string): Map<string, number> {
    const counts = new Map<string, number>()
    for (const r of this.routedSessions.get(hostId)?.values() ?? []) counts.set(r.key, (counts.get(r.key) ?? 0) + 1)
    for (const key of this.heldSessions.get(hostId)?.values() ?? []) counts.set(key, (counts.get(key) ?? 0) + 1)
    return counts
  }

  /** Only the instance holding the host (`owner`, null for this one) takes it offline: it may have moved to another. */
  markOffline(hostId: string, why: string, owner: string | null = null): void {
    const host = this.hosts.get(hostId)
    if (host === undefined || !host.online || host.owner !== owner) return
    host.online = false
    this.emit('offline', hostId, why)
    this.emit('changed', hostId)
    const claim = owner === null ? this.claims.get(hostId) : undefined
    this.claims.delete(hostId)
    // It went to another instance meanwhile: mirror it from there (its heartbeats come in that one's batches).
    if (claim !== undefined) this.mirror(claim.owner, claim.host)
  }

  get(hostId: string): LiveHost | undefined {
    return this.hosts.get(hostId)
  }

  /** Online hosts that serve `modelId`, whatever their status. */
  serving(modelId: string): LiveHost[] {
    return [...this.hosts.values()].filter((h) => h.online && h.state.modelId === modelId && h.state.blocks !== null)
  }

  /** Ready hosts per block of a model. */
  coverage(modelId: string, nLayer: number): number[] {
    const counts = new Array<number>(nLayer).fill(0)
    for (const h of this.serving(modelId)) {
      if (h.state.status !== 'ready' || h.state.blocks === null) continue
      for (let b = h.state.blocks[0]; b < Math.min(nLayer, h.state.blocks[1]); b++) counts[b] = (counts[b] ?? 0) + 1
    }
    return counts
  }

  summaries(): HostSummary[] {
    return [...this.hosts.values()].map((h) => ({
      hostId: h.hostId,
      online: h.online,
      profile: h.profile,
      state: h.state,
      lastSeen: h.lastHeartbeat,
    }))
  }

  sweep(now: number): void {
    // routed sessions never opened stop counting after the grace, heartbeat or not
    for (const [hostId, sessions] of this.routedSessions) {
      const host = this.hosts.get(hostId)
      let expired = false
      for (const [session, r] of sessions)
        if (now - r.at >= this.routedGraceMs) {
          sessions.delete(session)
          expired = true
        }
      if (host !== undefined && expired) {
        host.routedSinceHeartbeat = sessions.size
        this.emit('changed', hostId)
      }
    }
    for (const host of this.hosts.values()) {
      if (host.online && now - host.lastHeartbeat > 3 * this.heartbeatMs)
        this.markOffline(
          host.hostId,
          `missed three heartbeats (${3 * this.heartbeatMs} ` +
            `ms)${host.owner === null ? '' : ` from instance ${host.owner}`}`,
          host.owner,
        )
    }
  }

  close(): void {
    clearInterval(this.timer)
  }
}
