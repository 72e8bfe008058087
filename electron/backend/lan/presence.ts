import { hostname } from 'node:os'
import { Bonjour } from 'bonjour-service'
import { type NodeIdentity, nodeIdOf } from '../../../identity/keys'
import { type LanView, NeuronError, type PairedApp } from '../../../protocol'
import { LanAdvertiser } from './advertiser'
import { AskedPairings } from './asked-pairings'
import { AskingPairings } from './asking-pairings'
import { LanDiscovery } from './discovery'
import { PairingBook } from './pairing-book'
import { PairingServer } from './pairing-server'

export interface LanPresenceDeps {
  readonly identity: () => NodeIdentity
  /** The apps paired with this one, as saved. */
  readonly paired: () => readonly PairedApp[]
  /** Asked side: admit the key to the embedded swarm and save it as paired. */
  readonly admit: (key: string, name: string) => Promise<void>
  /** Asking side: join the asked app's tracker and save it as paired. */
  readonly join: (trackerUrl: string, peer: { key: string; name: string }) => Promise<void>
  readonly changed: (view: LanView) => void
  readonly log: (line: string) => void
  /** The pairing endpoint's address; tests pass 127.0.0.1. */
  readonly bindHost?: string
  /** A pairing's lifetime, ms (tests shorten it). */
  readonly pairingTtlMs?: number
  /** Advertise and browse by mDNS while open (default true); false opens the tracker and pairing endpoint alone. */
  readonly mdns?: boolean
}

/** mDNS while the app is open to the home network: nothing is sent on the network before the switch is on. */
interface Mdns {
  readonly bonjour: Bonjour
  readonly discovery: LanDiscovery
}

/** What is open to the home network now: the embedded tracker's port, or null when it is not. */
export type LanOpening = { trackerPort: number } | null

/**
 * This app on the home network, only while the Settings switch is on: browsing for other Neuron apps, and
 * advertised with its pairing endpoint while the app is on its embedded swarm. Off, it sends nothing.
 */
export class LanPresence {
  private mdns: Mdns | null = null
  private readonly book: PairingBook
  private readonly asked: AskedPairings
  private readonly asking: AskingPairings
  private advertiser: LanAdvertiser | null = null
  private server: PairingServer | null = null
  private trackerPort = 0
  private open = false
  private problem: string | null = null

  constructor(private readonly deps: LanPresenceDeps) {
    const changed = () => deps.changed(this.view())
    this.book = new PairingBook(changed, deps.pairingTtlMs)
    this.asked = new AskedPairings({
      book: this.book,
      key: () => deps.identity().publicKey,
      trackerPort: () => this.trackerPort,
      admit: deps.admit,
      log: deps.log,
      advertised: (key, address) =>
        this.mdns?.discovery.peers(new Set()).some((p) => p.key === key && p.address === address) === true,
    })
    this.asking = new AskingPairings({
      book: this.book,
      identity: deps.identity,
      name: () => this.name(),
      join: deps.join,
      log: deps.log,
    })
  }

  /**
   * This app's name on the home network: the hostname, which two computers may share (two VMs both called "vm"), then
   * its host id's short form (as the Swarm screen shows it), so every list and pairing prompt tells them apart.
   */
  private name(): string {
    const short = nodeIdOf(this.deps.identity().publicKey).slice(0, 8)
    return `${hostname().slice(0, 50) || 'neuron'} · ${short}`
  }

  /** The port of the open pairing endpoint; null while closed. */
  get pairingPort(): number | null {
    return this.server?.port ?? null
  }

  /** Opens or closes this app to the network, re-advertising when the tracker moved to another port. */
  async sync(opening: LanOpening, open: boolean): Promise<void> {
    this.open = open
    if (open && this.mdns === null && this.deps.mdns !== false) this.mdns = this.startMdns()
    if (!open && this.mdns !== null) await this.stopMdns()
    if (opening?.trackerPort === this.trackerPort && (this.advertiser !== null || this.mdns === null)) return
    await this.advertiser?.withdraw()
    this.advertiser = null
    await this.server?.close()
    this.server = null
    this.trackerPort = opening?.trackerPort ?? 0
    if (opening !== null) {
      this.server = await PairingServer.start(this.asked, this.deps.bindHost ?? '0.0.0.0', this.deps.log)
      const identity = this.deps.identity()
      const txt = {
        id: nodeIdOf(identity.publicKey),
        key: identity.publicKey,
        name: this.name(),
        port: opening.trackerPort,
        pair: this.server.port,
      }
      this.advertiser = this.mdns === null ? null : LanAdvertiser.publish(this.mdns.bonjour, txt)
      this.deps.log(`open to the home network: tracker port ${opening.trackerPort}, pairing port ${this.server.port}`)
    }
    this.deps.changed(this.view())
  }

  view(): LanView {
    const paired = this.deps.paired()
    return {
      open: this.open,
      advertising: this.advertiser !== null,
      problem: this.problem,
      peers: this.mdns?.discovery.peers(new Set(paired.map((p) => p.key))) ?? [],
      pairings: this.book.views(),
      paired: [...paired],
    }
  }

  async pair(key: string): Promise<LanView> {
    const peer = this.mdns?.discovery.peers(new Set()).find((p) => p.key === key)
    if (peer === undefined)
      throw new NeuronError(
        'peer_not_found',
        'that app is no longer seen on the network; check it is on, then pick it again',
      )
    await this.asking.ask(peer)
    return this.view()
  }

  async confirm(pairingId: string): Promise<LanView> {
    const { role } = this.book.get(pairingId).view
    await (role === 'asked' ? this.asked.confirmHere(pairingId) : this.asking.confirm(pairingId))
    return this.view()
  }

  async refuse(pairingId: string): Promise<LanView> {
    const { role } = this.book.get(pairingId).view
    if (role === 'asked') this.asked.refuse({ pairingId }, 'here')
    else await this.asking.refuse(pairingId)
    return this.view()
  }

  async close(): Promise<void> {
    this.book.close()
    await this.advertiser?.withdraw()
    await this.server?.close()
    await this.stopMdns()
  }

  private startMdns(): Mdns {
    const bonjour = new Bonjour({}, (error: Error) => {
      this.problem =
        `mDNS does not work on this network (${error.message}); other apps cannot find this one. ` +
        `Check the firewall allows UDP 5353`
      this.deps.log(this.problem)
    })
    return {
      bonjour,
      discovery: new LanDiscovery(
        bonjour,
        () => this.deps.identity().publicKey,
        () => this.deps.changed(this.view()),
      ),
    }
  }

  private async stopMdns(): Promise<void> {
    const mdns = this.mdns
    if (mdns === null) return
    this.mdns = null
    await this.advertiser?.withdraw()
    this.advertiser = null
    mdns.discovery.stop()
    await new Promise<void>((resolve) => mdns.bonjour.destroy(() => resolve()))
  }
}
