import NatAPI from '@silentbot1/nat-api'
import { AskAgain } from './ask-again'

/**
 * How often a mapping is asked for again, ms: a router that
 * restarted has forgotten it, and one packet to it costs nothing.
 */
const REFRESH_MS = 15_000

/** A port the router forwards to this computer: where the rest of the swarm can reach it. */
export interface MappedPort {
  readonly externalIp: string
  readonly externalPort: number
}

export interface PortMappingOptions {
  /** How often the mapping is asked for again: a router that restarted (miniupnpd, a reboot) has forgotten it. */
  readonly refreshMs?: number
  /** Called when the mapping appears, changes or is lost (null). */
  readonly onChange: (mapped: MappedPort | null) => void
  readonly log?: (line: string) => void
  /** What the mapping says on the router's list (UPnP's description). */
  readonly description?: string
}

/**
 * Asks the home router to forward a TCP port to this computer, by NAT-PMP and then UPnP-IGD (the library BitTorrent
 * clients use, @silentbot1/nat-api, as webtorrent does), asks again every 15 s (the library's own renewal comes
 * only 10 minutes before a 2-hour lease ends, too late for a router that restarted), and removes the mapping on close.
 */
export class PortMapping {
  private readonly nat: NatAPI
  private current: MappedPort | null = null
  private readonly schedule = new AskAgain(
    () => this.mapOnce(),
    () => this.options.refreshMs ?? REFRESH_MS,
  )
  /** Asks made so far: only the latest schedules the next. */

  constructor(
    readonly port: number,
    private readonly options: PortMappingOptions,
  ) {
    this.nat = new NatAPI({ description: options.description ?? 'Neuron', autoUpdate: false })
  }

  /** The mapping now, or null while the router has none for it. */
  get mapped(): MappedPort | null {
    return this.current
  }

  /** Maps at once, then again every refreshMs; never throws (no router that answers means no mapping). */
  start(): Promise<void> {
    return this.refresh()
  }

  /** Asks the router again now (this computer's address changed), then every refreshMs. */
  refresh(): Promise<void> {
    return this.schedule.now()
  }

  private async mapOnce(): Promise<void> {
    let next: MappedPort | null = null
    try {
      const ok = await this.nat.map({ publicPort: this.port, privatePort: this.port, protocol: 'TCP' })
      const externalIp = ok ? await this.nat.externalIp() : ''
      if (ok && externalIp !== '') next = { externalIp, externalPort: this.port }
    } catch (error) {
      this.options.log?.(`port mapping of ${this.port} failed: ${error instanceof Error ? error.message : error}`)
    }
    if (this.schedule.closed) return
    if (next?.externalIp === this.current?.externalIp && next?.externalPort === this.current?.externalPort) return
    this.current = next
    this.options.log?.(
      next === null
        ? `the router forwards no port to ${this.port} (no UPnP-IGD or NAT-PMP answer)`
        : `the router forwards ${next.externalIp}:${next.externalPort} to port ${this.port}`,
    )
    this.options.onChange(next)
  }

  /**
   * Stops refreshing and removes the mapping from the router (best
   * effort: a router that is gone keeps it until its lease ends).
   */
  async close(): Promise<void> {
    if (this.schedule.closed) return
    await this.schedule.close()
    await this.nat.destroy().catch(() => undefined)
  }
}
