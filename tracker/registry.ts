import { EventEmitter } from 'node:events'
import type { HardwareProfile, HostSummary, ServingState } from '../protocol'

export interface LiveHost {
  readonly hostId: string
  readonly publicKey: string
  profile: HardwareProfile
  state: ServingState
  lastHeartbeat: number
  online: boolean
}

/**
 * Who is serving what, right now. Hosts heartbeat every `heartbeatMs`; after three missed
 * heartbeats (or a dropped connection) a host is offline and out of routing at once.
 */
export class HostRegistry extends EventEmitter<{ offline: [hostId: string, why: string]; changed: [hostId: string] }> {
  private readonly hosts = new Map<string, LiveHost>()
  private readonly timer: NodeJS.Timeout

  constructor(readonly heartbeatMs: number) {
    super()
    this.timer = setInterval(() => this.sweep(Date.now()), Math.max(50, Math.floor(heartbeatMs / 2)))
    this.timer.unref()
  }

  hello(hostId: string, publicKey: string, profile: HardwareProfile, state: ServingState, now = Date.now()): LiveHost {
    const host: LiveHost = { hostId, publicKey, profile, state, lastHeartbeat: now, online: true }
    this.hosts.set(hostId, host)
    this.emit('changed', hostId)
    return host
  }

  updateState(hostId: string, state: ServingState, now = Date.now()): void {
    const host = this.hosts.get(hostId)
    if (host === undefined) return
    host.state = state
    host.lastHeartbeat = now
    host.online = true
    this.emit('changed', hostId)
  }

  heartbeat(hostId: string, activeSessions: number, now = Date.now()): void {
    const host = this.hosts.get(hostId)
    if (host === undefined) return
    host.lastHeartbeat = now
    host.state = { ...host.state, activeSessions }
    if (!host.online) {
      host.online = true
      this.emit('changed', hostId)
    }
  }

  markOffline(hostId: string, why: string): void {
    const host = this.hosts.get(hostId)
    if (host === undefined || !host.online) return
    host.online = false
    this.emit('offline', hostId, why)
    this.emit('changed', hostId)
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
    return [...this.hosts.values()].map((h) => ({ hostId: h.hostId, online: h.online, profile: h.profile, state: h.state, lastSeen: h.lastHeartbeat }))
  }

  sweep(now: number): void {
    for (const host of this.hosts.values()) {
      if (host.online && now - host.lastHeartbeat > 3 * this.heartbeatMs) this.markOffline(host.hostId, `missed three heartbeats (${3 * this.heartbeatMs} ms)`)
    }
  }

  close(): void {
    clearInterval(this.timer)
  }
}
