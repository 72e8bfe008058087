import type { TlsCertificate } from '../../dataplane/tls-trust'
import type { NodeIdentity } from '../../identity/keys'
import { isLoopbackHost, type ServingState } from '../../protocol'
import {
  behindRouter,
  globalAddresses6,
  interfaceAddresses6,
  interfaceCandidates,
  listensEverywhere,
} from './candidates'
import { type HostCertificate, hostCertificate } from './certificate'
import { Pinholes } from './pinhole'
import { PortMapping } from './port-mapping'

/** How often the host looks at its interfaces for a new address (a DHCP lease, another network). */
const ADDRESS_CHECK_MS = 5_000
/**
 * How long serving waits for the router's first answer, so the
 * first offer has the mapped port where a router maps one quickly.
 */
const FIRST_MAPPING_WAIT_MS = 3_000

export interface ReachableOptions {
  /** The tracker: on loopback, the swarm is this computer and the data plane stays there too. */
  readonly trackerUrl: string
  readonly identity: NodeIdentity
  readonly dataDir: string
  readonly listenHost?: string
  readonly listenPort?: number
  readonly tls?: TlsCertificate
  readonly advertise?: (listening: string) => string | Promise<string>
  /** Ask the router for a mapped port and IPv6 pinholes (default: where it listens everywhere, tracker elsewhere). */
  readonly portMapping?: boolean
  /** The router to ask for IPv6 pinholes (PCP); default the v6 default route's next hop. */
  readonly pinholeRouter?: string
  readonly log?: (line: string) => void
}

/** What listening needs decided before the data plane starts: where, whether over TLS, whether to ask the router. */
export interface ReachablePlan extends ReachableOptions {
  readonly listenHost: string
  /** Serve wss:// with a pinned certificate: everywhere but a loopback-only swarm (unless a certificate is given). */
  readonly secure: boolean
  /** Ask the router to forward the data-plane and BitTorrent ports. */
  readonly mapsPorts: boolean
  /** Ask the router's IPv6 firewall for a pinhole to the data-plane port on each global IPv6 address. */
  readonly opensPinholes: boolean
}

/** What changed: this computer's addresses (its connections from the old one are gone), or the router's mapping. */
export type ReachableChange = 'addresses' | 'mapping' | 'pinhole'

/** A data-plane server the host listens with: the ShardServer, or anything with its listen(). */
export interface Listener {
  listen(port: number, host: string, tls?: TlsCertificate): Promise<string>
}

/**
 * Where the swarm may reach a host's data plane: it listens (every interface by default), offers its candidate
 * endpoints (each interface's address, a port mapped on the router) with its own certificate's fingerprint, and says
 * when they change. The tracker dials each back; only one that
 * proves the host's key is routed to (tracker/reachability/).
 */
export class Reachable {
  private mapping: PortMapping | undefined
  private pinholes: Pinholes | undefined
  private addresses: string[]
  private readonly listeners = new Set<(why: ReachableChange) => void>()
  private readonly watch: NodeJS.Timeout

  private constructor(
    private readonly plan: ReachablePlan,
    private readonly listening: string,
    private readonly advertised: string | undefined,
    private readonly certificate: HostCertificate | undefined,
  ) {
    this.addresses = interfaceCandidates(listening)
    this.watch = setInterval(() => this.checkAddresses(), ADDRESS_CHECK_MS).unref()
  }

  static plan(options: ReachableOptions): ReachablePlan {
    const local = isLoopbackHost(new URL(options.trackerUrl || 'http://127.0.0.1').hostname)
    // `::` takes IPv4 too (dual stack); only where this computer has IPv6 worth offering
    const everywhere = interfaceAddresses6().length > 0 ? '::' : '0.0.0.0'
    const listenHost = options.listenHost ?? (local ? '127.0.0.1' : everywhere)
    const secure = options.tls !== undefined || !isLoopbackHost(listenHost)
    const mapsPorts = options.portMapping ?? (!local && listensEverywhere(listenHost) && behindRouter())
    const opensPinholes = options.portMapping ?? (!local && listenHost === '::' && globalAddresses6().length > 0)
    return { ...options, listenHost, secure, mapsPorts, opensPinholes }
  }

  /** Starts `server` listening as planned and, where it should, asks the router for the port. */
  static async listen(server: Listener, plan: ReachablePlan): Promise<Reachable> {
    const certificate = plan.secure ? await hostCertificate(plan.dataDir, plan.identity, plan.tls) : undefined
    const listening = await server.listen(plan.listenPort ?? 0, plan.listenHost, certificate)
    const advertised = plan.advertise === undefined ? undefined : await plan.advertise(listening)
    const reachable = new Reachable(plan, listening, advertised, certificate)
    plan.log?.(
      `data plane listening at ` +
        `${listening}${certificate === undefined ? '' : ` (certificate ${certificate.fingerprint.slice(0, 16)}…)`}`,
    )
    const port = Number(new URL(listening).port)
    await Promise.all([
      plan.mapsPorts ? reachable.startMapping(port) : undefined,
      plan.opensPinholes && plan.listenHost === '::' ? reachable.startPinholes(port) : undefined,
    ])
    return reachable
  }

  /** The state fields that say where this host may be reached: the tracker proves one of them before routing here. */
  offer(): Pick<ServingState, 'endpoint' | 'candidates' | 'tls'> {
    const scheme = new URL(this.listening).protocol
    const mapped = this.mapping?.mapped
    // an open pinhole's endpoint comes first, a global v6 address its router did not open goes last: the order
    // changes when a pinhole opens (no new address), so the tracker dials again (it reuses a proof for one offer)
    const pinholed = (this.pinholes?.open ?? []).map((p) => `${scheme}//[${p.address}]:${p.port}/`)
    const shut = (c: string) => this.pinholes !== undefined && c.startsWith(`${scheme}//[`) && !pinholed.includes(c)
    const candidates = [
      ...new Set([
        ...(this.advertised === undefined ? [] : [this.advertised]),
        ...(mapped == null ? [] : [`${scheme}//${mapped.externalIp}:${mapped.externalPort}/`]),
        ...pinholed,
        ...this.addresses.filter((c) => !shut(c)),
        ...this.addresses.filter(shut),
      ]),
    ].slice(0, 8)
    return {
      // older trackers route to `endpoint` as it is: the best guess, the first candidate
      endpoint: candidates[0] ?? null,
      candidates,
      ...(this.certificate === undefined
        ? {}
        : { tls: { fingerprint: this.certificate.fingerprint, signature: this.certificate.signature } }),
    }
  }

  /** Calls `listener` when the offer changes: a new interface address, a mapping made, changed or lost. */
  onChange(listener: (why: ReachableChange) => void): void {
    this.listeners.add(listener)
  }

  async close(): Promise<void> {
    clearInterval(this.watch)
    this.listeners.clear()
    await Promise.all([this.mapping?.close(), this.pinholes?.close()])
  }

  /**
   * Asks the router for `port`; waits a little for its first answer, then goes on in the background (a home without
   * UPnP or NAT-PMP must not hold up serving).
   */
  private async startMapping(port: number): Promise<void> {
    this.mapping = new PortMapping(port, {
      onChange: () => this.changed('mapping'),
      ...(this.plan.log === undefined ? {} : { log: this.plan.log }),
    })
    await awhile(this.mapping.start())
  }

  /** Asks the router's IPv6 firewall for pinholes to `port`; waits a little for the first answers, as for mapping. */
  private async startPinholes(port: number): Promise<void> {
    this.pinholes = new Pinholes(port, {
      addresses: globalAddresses6,
      onChange: () => this.changed('pinhole'),
      ...(this.plan.pinholeRouter === undefined ? {} : { router: this.plan.pinholeRouter }),
      ...(this.plan.log === undefined ? {} : { log: this.plan.log }),
    })
    await awhile(this.pinholes.start())
  }

  private checkAddresses(): void {
    const now = interfaceCandidates(this.listening)
    if (now.join() === this.addresses.join()) return
    this.plan.log?.(
      `this computer's addresses changed (${this.addresses.join(', ')} -> ${now.join(', ')}); offering them to the ` +
        `tracker`,
    )
    this.addresses = now
    // the router's mapping points at the old address: ask for it again from the new one
    void this.mapping?.refresh()
    void this.pinholes?.refresh()
    this.changed('addresses')
  }

  private changed(why: ReachableChange): void {
    for (const l of this.listeners) l(why)
  }
}

/** Waits for `asked` at most FIRST_MAPPING_WAIT_MS; it goes on in the background after that. */
async function awhile(asked: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([asked, new Promise<void>((resolve) => (timer = setTimeout(resolve, FIRST_MAPPING_WAIT_MS)))])
  clearTimeout(timer)
}
