import type { NodeIdentity } from '../../identity/keys'
import type { RelayAssignment, RelayOffer, RelayReceipt } from '../../protocol'
import type { ShardServer } from '../serving/shard-server'
import { ReceiptOutbox } from '../tracker-session/receipt-outbox'
import { RelayReservation } from './relay-reservation'
import { RelayService } from './relay-service'

/** How a host relays for others (--relay-for-others): circuits at once and bandwidth, Mbit/s. */
export interface RelayForOthers {
  readonly circuits: number
  readonly mbit: number
}

export interface RelayingOptions {
  readonly identity: NodeIdentity
  readonly server: ShardServer
  /** Relay for others on the data-plane port (the tracker uses the offer only where it proved a public endpoint). */
  readonly forOthers?: RelayForOthers | undefined
  readonly trackerKey: () => string | undefined
  /** Hands the relay's receipts to the tracker (relay.receipts). */
  readonly submit: (receipts: RelayReceipt[]) => Promise<unknown>
  /** The offer changed: the host sends its state again (debounced here). */
  readonly onOfferChange: () => void
  readonly log: (line: string) => void
}

/**
 * A host's part in volunteer relaying: the relay it runs for others, and its own reservation at one when unreachable.
 */
export class HostRelaying {
  readonly service: RelayService | undefined
  private reservation: RelayReservation | undefined
  private readonly outbox: ReceiptOutbox<RelayReceipt>
  private changeSoon: NodeJS.Timeout | undefined

  constructor(private readonly options: RelayingOptions) {
    this.outbox = new ReceiptOutbox<RelayReceipt>(options.submit, options.log)
    const forOthers = options.forOthers
    if (forOthers !== undefined) {
      const service = new RelayService({
        relayId: options.identity.id,
        circuits: forOthers.circuits,
        mbit: forOthers.mbit,
        trackerKey: options.trackerKey,
        sign: (m) => options.identity.sign(m),
        onReceipt: (r) => this.outbox.add(r),
        onChange: () => this.offerChanged(),
        log: options.log,
      })
      options.server.upgrades = (req, socket, head) => service.handleUpgrade(req, socket, head)
      this.service = service
    }
  }

  /** The relay offer for this host's state (undefined: it relays for nobody). */
  offer(): RelayOffer | undefined {
    return this.service?.offer()
  }

  /** Whether this host holds no reservation (it is reachable, or no relay had room when the tracker last said). */
  get unreserved(): boolean {
    return this.reservation === undefined
  }

  /** Where the tracker says to reserve (null: nowhere, this host is reachable or no relay has room). */
  assign(relay: RelayAssignment | null): void {
    const now = this.reservation?.relay
    if (relay !== null && now !== undefined && now.hostId === relay.hostId && now.endpoint === relay.endpoint) return
    this.reservation?.close()
    this.reservation = undefined
    if (relay === null) return
    this.options.log(`the tracker names relay ${relay.hostId} at ${relay.endpoint}; reserving there`)
    this.reservation = new RelayReservation(
      relay,
      this.options.identity,
      (frame, caller) => this.options.server.handle(frame, caller),
      this.options.log,
    )
  }

  async close(): Promise<void> {
    clearTimeout(this.changeSoon)
    this.reservation?.close()
    this.service?.close()
    await this.outbox.flush()
    this.outbox.close()
  }

  private offerChanged(): void {
    this.changeSoon ??= setTimeout(() => {
      this.changeSoon = undefined
      this.options.onOfferChange()
    }, 200).unref()
  }
}
