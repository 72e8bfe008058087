import {
  MAX_PENDING_PAIRINGS,
  MAX_PENDING_PER_ADDRESS,
  NeuronError,
  PAIRING_TTL_MS,
  type PairingState,
  type PairingView,
} from '../../../protocol'

/** One pairing as this app holds it: the view both screens show, plus the secrets and addresses behind it. */
export interface Pairing {
  view: PairingView
  readonly myNonce: string
  peerNonce: string | null
  /** Asking side: the asked app's commitment to its nonce, checked when the nonce comes. */
  readonly commitment: string | null
  /** Asking side: where the asked app answers. */
  readonly peer: { address: string; pairingPort: number; trackerPort: number } | null
  /** Asked side: the address the hello came from, and whether an app seen on the network at that address sent it. */
  readonly from?: { readonly address: string; readonly advertised: boolean }
}

/** Settled pairings kept for the screens to show how they ended. */
const KEPT_SETTLED = 16

/**
 * The pairings this app holds, either role: at most MAX_PENDING_PAIRINGS open at once, each lapsing
 * PAIRING_TTL_MS after it began. Every change is told to `changed`, so the screens follow.
 */
export class PairingBook {
  private readonly pairings = new Map<string, Pairing>()
  private readonly timers = new Map<string, NodeJS.Timeout>()

  constructor(
    private readonly changed: () => void,
    private readonly ttlMs = PAIRING_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  get expiresAt(): number {
    return this.now() + this.ttlMs
  }

  /**
   * Holds a new pairing. A stranger's (no app seen on the network at its address) counts against its address, at most
   * MAX_PENDING_PER_ADDRESS waiting, and against the strangers' MAX_PENDING_PAIRINGS; an app seen on the network has
   * MAX_PENDING_PAIRINGS of its own, so a flood of strangers' hellos never keeps it from pairing.
   */
  add(pairing: Pairing): void {
    const waiting = [...this.pairings.keys()].map((id) => this.get(id)).filter((p) => p.view.state === 'code')
    const from = pairing.from
    const stranger = from !== undefined && !from.advertised
    const alike = waiting.filter((p) => (p.from !== undefined && !p.from.advertised) === stranger)
    if (stranger) {
      const fromThere = alike.filter((p) => p.from?.address === from.address).length
      if (fromThere >= MAX_PENDING_PER_ADDRESS)
        throw new NeuronError(
          'pairing_busy',
          `${fromThere} pairings from this address are waiting for a confirmation already; finish or refuse one, ` +
            `or wait a minute`,
        )
    }
    if (alike.length >= MAX_PENDING_PAIRINGS) {
      throw new NeuronError(
        'pairing_busy',
        `this app already has ${alike.length} pairings waiting for a confirmation; finish or refuse one, or wait a ` +
          `minute`,
      )
    }
    this.pairings.set(pairing.view.pairingId, pairing)
    const settled = [...this.pairings.values()].filter((p) => p.view.state !== 'code')
    for (const old of settled.slice(0, Math.max(0, settled.length - KEPT_SETTLED)))
      this.pairings.delete(old.view.pairingId)
    // Expires on its own, so both screens say so without a message from the other side.
    const timer = setTimeout(
      () => this.get(pairing.view.pairingId),
      Math.max(0, pairing.view.expiresAt - this.now()) + 10,
    )
    timer.unref()
    this.timers.set(pairing.view.pairingId, timer)
    this.changed()
  }

  /** The pairing, expired first if its minute passed unconfirmed; throws pairing_unknown for an id never seen. */
  get(pairingId: string): Pairing {
    const pairing = this.pairings.get(pairingId)
    if (pairing === undefined)
      throw new NeuronError(
        'pairing_unknown',
        `no pairing ${pairingId} here (it ended long ago, or the app restarted); ask to pair again`,
      )
    if (pairing.view.state === 'code' && this.now() >= pairing.view.expiresAt) {
      this.settle(
        pairing,
        'expired',
        `the pairing with ${pairing.view.peerName} expired: it was not confirmed on both screens within a minute; ` +
          `ask again`,
      )
    }
    return pairing
  }

  /** The pairing if it still waits for confirmations; says how it ended otherwise. */
  open(pairingId: string): Pairing {
    const pairing = this.get(pairingId)
    if (pairing.view.state !== 'code')
      throw new NeuronError(
        `pairing_${pairing.view.state}`,
        pairing.view.message ?? `the pairing is ${pairing.view.state} already`,
      )
    return pairing
  }

  update(pairing: Pairing, change: Partial<PairingView>): void {
    pairing.view = { ...pairing.view, ...change }
    this.changed()
  }

  settle(pairing: Pairing, state: Exclude<PairingState, 'code'>, message: string | null): void {
    clearTimeout(this.timers.get(pairing.view.pairingId))
    this.timers.delete(pairing.view.pairingId)
    this.update(pairing, { state, message })
  }

  views(): PairingView[] {
    for (const id of this.pairings.keys()) this.get(id)
    return [...this.pairings.values()].map((p) => p.view)
  }

  close(): void {
    for (const timer of this.timers.values()) clearTimeout(timer)
    this.timers.clear()
  }
}
